"""The app's answers that need no browser: hosts, paths, queries, headers, 404s."""

from __future__ import annotations

from pathlib import Path

import pytest
from starlette.testclient import TestClient

from evalrelay.bridge.connection import connect
from evalrelay.bridge.live.app import SECURITY_HEADERS, create_app
from evalrelay.bridge.live.campaigns import Campaigns
from evalrelay.bridge.live.panel import live_panel
from evalrelay.bridge.live.redis_link import RedisLink
from evalrelay.bridge.live.report_cache import ReportCache
from evalrelay.bridge.results.write_errors import can_write, cannot_write
from tests.bridge.reports.reporting import CAMPAIGN, write_campaign


def app_for(redis_url: str, tmp_path: Path, loopback: bool) -> TestClient:
    results = tmp_path / "results"
    write_campaign(results, CAMPAIGN)
    cache = ReportCache(tmp_path / "cache", live_panel)
    app = create_app(Campaigns(RedisLink(redis_url), results), cache, loopback=loopback)
    return TestClient(app, base_url="http://127.0.0.1:8431", follow_redirects=False)


@pytest.fixture
def web(redis_url: str, tmp_path: Path) -> TestClient:
    return app_for(redis_url, tmp_path, loopback=True)


def test_only_loopback_names_are_answered_when_bound_to_loopback(
    web: TestClient, redis_url: str, tmp_path: Path
) -> None:
    assert web.get("/api/campaigns", headers={"Host": "evil.example"}).status_code == 400
    assert web.get("/api/campaigns", headers={"Host": "localhost:8431"}).status_code == 200
    anywhere = app_for(redis_url, tmp_path / "other", loopback=False)
    assert anywhere.get("/api/campaigns", headers={"Host": "evil.example"}).status_code == 200


def test_every_answer_forbids_loading_from_elsewhere_and_framing(web: TestClient) -> None:
    for path in ("/", "/api/campaigns", "/campaigns/camp/", "/nowhere"):
        answer = web.get(path)
        for name, value in SECURITY_HEADERS.items():
            assert answer.headers[name] == value, path


def test_a_campaign_page_is_at_its_folder_and_polls_with_a_checked_offset(web: TestClient) -> None:
    moved = web.get("/campaigns/camp")
    assert moved.status_code == 307 and moved.headers["location"].endswith("/campaigns/camp/")
    assert web.get("/campaigns/camp/").headers["cache-control"] == "no-store"
    assert web.get("/api/campaigns/camp?after=0").json()["offset"] > 0
    for query in ("?after=-1", "?after=x", "?file=" + "x" * 65, "?other=1"):
        assert web.get("/api/campaigns/camp" + query).status_code == 400, query


def test_unknown_pages_name_the_campaigns_there_are(web: TestClient) -> None:
    page = web.get("/nowhere")
    assert page.status_code == 404 and "There is nothing at /nowhere." in page.text
    assert '<a href="/campaigns/camp/">camp</a>' in page.text
    api = web.get("/api/campaigns/nope")
    assert api.status_code == 404
    assert api.json()["known"] == ["camp"]
    assert api.json()["detail"].startswith("No campaign 'nope': Redis does not know it, and")
    assert web.get("/campaigns/a..b/").status_code == 404
    assert "is not a campaign id" in web.get("/campaigns/.hidden/").text


def test_a_collector_that_cannot_write_is_said_on_both_feeds(
    web: TestClient, redis_url: str, tmp_path: Path
) -> None:
    client = connect(redis_url)
    error = "No space left on device (ENOSPC)"
    cannot_write(client, "collect@h", "camp", "/r/camp.jsonl", error, since=0)
    (said,) = web.get("/api/campaigns").json()["cannot_write"]
    assert said.startswith("collector collect@h: cannot write ")
    assert "/r/camp.jsonl: No space left on device (ENOSPC) since " in said
    assert web.get("/api/campaigns/camp").json()["cannot_write"] == [said]
    can_write(client, "collect@h", "camp")
    assert web.get("/api/campaigns").json()["cannot_write"] == []


def test_the_part_a_collector_wrote_before_a_takeover_is_no_campaign(
    web: TestClient, tmp_path: Path
) -> None:
    results = tmp_path / "results"
    (results / "camp.partial-host-1.jsonl").write_bytes((results / "camp.jsonl").read_bytes())
    listed = [c["campaign_id"] for c in web.get("/api/campaigns").json()["campaigns"]]
    assert listed == ["camp"]
    assert web.get("/api/campaigns/camp.partial-host-1").status_code == 404

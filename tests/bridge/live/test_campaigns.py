"""Which campaigns there are: Redis's and the results folder's, each listed once, and
where each one's file is."""

from __future__ import annotations

import socket
from pathlib import Path

import pytest
import redis

from evalrelay.bridge.keys import results_home_key
from evalrelay.bridge.live.campaigns import Campaigns, is_campaign_id
from evalrelay.bridge.live.redis_link import RedisLink
from evalrelay.bridge.results.collected import ResultsHome
from tests.bridge.queue.test_campaigns import add_campaign
from tests.bridge.reports.reporting import CAMPAIGN, write_campaign

RUNNING = "evals-20260301-121000-bbbb"
FINISHED = "evals-20260301-120000-aaaa"


@pytest.fixture
def campaigns(redis_url: str, client: redis.Redis, tmp_path: Path) -> Campaigns:
    results = tmp_path / "results"
    add_campaign(client, FINISHED, 0, total=2, done=2, out_dir=str(results))
    add_campaign(client, RUNNING, 10, total=5, done=1, out_dir=str(tmp_path / "elsewhere"))
    write_campaign(results, CAMPAIGN[:2], name=FINISHED)
    write_campaign(results, CAMPAIGN, name="camp")  # the folder's only
    write_campaign(results, CAMPAIGN[:1], name="camp.attempts")
    write_campaign(results, CAMPAIGN[:1], name="two words")
    return Campaigns(RedisLink(redis_url), results)


def test_redis_campaigns_and_folder_files_are_listed_once_newest_first(
    campaigns: Campaigns,
) -> None:
    rows = campaigns.listing()
    assert [(r.campaign_id, r.state, r.done, r.total) for r in rows] == [
        ("camp", "file only", 6, None),  # its results started in November
        (RUNNING, "running", 1, 5),
        (FINISHED, "finished", 2, 2),
    ]
    assert rows[0].targets == ["claude", "gpt"]
    assert rows[0].results_in == f"{socket.gethostname()}:{campaigns.folder / 'camp.jsonl'}"
    assert rows[1].results_in.endswith("elsewhere (no result collected yet)")


def test_each_campaign_is_located_with_its_file_here_or_none(
    campaigns: Campaigns, client: redis.Redis, tmp_path: Path
) -> None:
    running = campaigns.locate(RUNNING)
    assert running is not None and running.file == tmp_path / "elsewhere" / f"{RUNNING}.jsonl"
    here = ResultsHome.here(tmp_path / "collected" / "x.jsonl", "c")
    client.set(results_home_key(RUNNING), here.model_dump_json())
    assert campaigns.locate(RUNNING).file == tmp_path / "collected" / "x.jsonl"  # type: ignore[union-attr]
    away = ResultsHome(host="another-host", path="/srv/x.jsonl", collector="c")
    client.set(results_home_key(RUNNING), away.model_dump_json())
    elsewhere = campaigns.locate(RUNNING)
    assert elsewhere is not None and elsewhere.file is None
    assert elsewhere.row.results_in == "another-host:/srv/x.jsonl"
    folder_only = campaigns.locate("camp")
    assert folder_only is not None and folder_only.file == campaigns.folder / "camp.jsonl"
    assert folder_only.row.state == "file only" and folder_only.queues == []
    for unknown in ("nope", "camp.attempts", "two words", "../results/camp", "..", ".camp"):
        assert campaigns.locate(unknown) is None, unknown


def test_while_redis_is_out_of_reach_its_campaigns_are_shown_as_last_seen(
    campaigns: Campaigns,
) -> None:
    campaigns.listing()
    campaigns.link.client = redis.Redis.from_url("redis://127.0.0.1:1/0")
    rows = {r.campaign_id: r for r in campaigns.listing()}
    assert {r.state for r in rows.values()} == {"out of reach"}
    assert (rows[FINISHED].done, rows[FINISHED].total) == (2, 2)  # from its file
    assert (rows[RUNNING].done, rows[RUNNING].total) == (1, 5)  # as Redis said last
    located = campaigns.locate(FINISHED)
    assert located is not None and located.row.state == "out of reach"
    assert located.file == campaigns.folder / f"{FINISHED}.jsonl"
    assert campaigns.locate("camp") is not None


@pytest.mark.parametrize(
    ("text", "valid"),
    [
        ("evals-20260301-120000-aaaa", True),
        ("a_b.c-d", True),
        ("..", False),
        ("a..b", False),
        (".hidden", False),
        ("-dash", False),
        ("a/b", False),
        ("a%2fb", False),
        ("", False),
        ("x" * 201, False),
        ("run.attempts", False),
    ],
)
def test_campaign_ids_are_slugs(text: str, valid: bool) -> None:
    assert is_campaign_id(text) is valid

"""`evalrelay resume` takes the campaign as every command does: `latest`, a name, a prefix;
it rebuilds a campaign Redis lost, but not one dropped in an inbox."""

from __future__ import annotations

import os
from pathlib import Path

import redis

from evalrelay.bridge.keys import campaign_key
from evalrelay.bridge.queue.campaigns import CampaignInfo, Plan
from evalrelay.bridge.queue.rebuild import DroppedFile, write_record
from tests.bridge.cli.test_run import evalrelay
from tests.bridge.queue.test_campaigns import add_campaign
from tests.conftest import one_turn_cases


def test_resume_latest_resumes_the_newest_campaign(
    client: redis.Redis, redis_url: str, tmp_path: Path
) -> None:
    add_campaign(client, "old-20260301-120000-aaaa", 0, out_dir=str(tmp_path), done=1)
    add_campaign(client, "new-20260301-121000-bbbb", 10, out_dir=str(tmp_path), done=1)
    env = {**os.environ, "EVALRELAY_REDIS_URL": redis_url, "COLUMNS": "200"}
    for text, campaign_id in (
        ("latest", "new-20260301-121000-bbbb"),
        ("old", "old-20260301-120000-aaaa"),
    ):
        resumed = evalrelay("resume", text, env=env, cwd=tmp_path)
        assert resumed.returncode == 0, resumed.stderr
        assert f"campaign {campaign_id}" in resumed.stderr
        assert "0 of 1 job sent again" in resumed.stderr


def test_resume_leaves_a_campaign_dropped_in_an_inbox_to_its_watcher(
    client: redis.Redis, redis_url: str, tmp_path: Path
) -> None:
    """Its record names a file in the inbox, which is untrusted: `resume` does not load it
    the way `run` would, and says who rebuilds it."""
    inbox, results = tmp_path / "inbox", tmp_path / "results"
    info = CampaignInfo(
        campaign_id="dropped-20260101-000000-abcd", created_at="2026-01-01T00:00:00Z",
        sources=[str(inbox / "e.yaml")], targets=["mock"], total=2, out_dir=str(results),
        collector="watch", plan=Plan(fallback_target="mock"),
    )  # type: ignore[arg-type]  # fmt: skip
    (inbox / "queued").mkdir(parents=True)
    (inbox / "queued" / "e.yaml").write_text(one_turn_cases(2))
    dropped = DroppedFile(inbox=str(inbox), path="e.yaml", queued="queued/e.yaml", identity="x")
    write_record(info, dropped)
    env = {**os.environ, "EVALRELAY_REDIS_URL": redis_url, "COLUMNS": "200"}
    resumed = evalrelay("resume", str(results / f"{info.campaign_id}.jsonl"), env=env, cwd=tmp_path)
    assert resumed.returncode != 0
    said = " ".join(resumed.stderr.split())
    assert f"campaign {info.campaign_id} was dropped in the inbox {inbox}" in said, said
    assert f"start `evalrelay watch {inbox}` if none runs" in said
    assert client.llen("api") == 0
    assert not client.exists(campaign_key(info.campaign_id))

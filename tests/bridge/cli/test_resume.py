"""`evalrelay resume` takes the campaign as every command does: `latest`, a name, a prefix."""

from __future__ import annotations

import os
from pathlib import Path

import redis

from tests.bridge.cli.test_run import evalrelay
from tests.bridge.queue.test_campaigns import add_campaign


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

"""`evalrelay gc`: says what it removed from the Redis the commands use."""

from __future__ import annotations

import os
from pathlib import Path

import redis

from evalrelay.bridge.keys import job_dictionary_key, job_key, listed_key, manifest_key
from evalrelay.bridge.queue.campaigns import store_jobs
from evalrelay.bridge.queue.gc import STORING_SECONDS
from evalrelay.bridge.results.retention import RETENTION_SECONDS
from tests.bridge.cli.test_run import evalrelay
from tests.conftest import direct_job


def test_gc_removes_orphaned_keys_and_says_so(
    client: redis.Redis, redis_url: str, tmp_path: Path
) -> None:
    store_jobs(client, [direct_job(campaign_id="forgotten", job_id="orphan")])
    orphans = (
        job_key("orphan"),
        manifest_key("forgotten", "orphan"),
        listed_key("forgotten"),
        job_dictionary_key("forgotten"),
    )
    for key in orphans:  # written long ago by a submitter killed while storing them
        client.expire(key, RETENTION_SECONDS - STORING_SECONDS - 60)
    env = {**os.environ, "EVALRELAY_REDIS_URL": redis_url}
    done = evalrelay("gc", env=env, cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert "removed 4 per-job keys of campaigns no longer known" in done.stdout
    assert not client.exists(*orphans)

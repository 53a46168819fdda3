"""`evalrelay gc`: says what it removed from the Redis the commands use."""

from __future__ import annotations

import os
from pathlib import Path

import redis

from evalrelay.bridge.keys import done_key
from tests.bridge.cli.test_run import evalrelay


def test_gc_removes_orphaned_keys_and_says_so(
    client: redis.Redis, redis_url: str, tmp_path: Path
) -> None:
    client.set(done_key("orphan"), "1")
    env = {**os.environ, "EVALRELAY_REDIS_URL": redis_url}
    done = evalrelay("gc", env=env, cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert "removed 1 per-job key of campaigns no longer known" in done.stdout
    assert not client.exists(done_key("orphan"))

"""`evalrelay status` lists live workers and watchers, and drops the ones gone for good."""

from __future__ import annotations

import json
import os
import time
from pathlib import Path

import redis

from bridge.keys import watchers_key, workers_key
from bridge.queue.holders import GONE_SECONDS
from tests.bridge.cli.test_run import evalrelay


def test_status_marks_silent_workers_and_drops_long_gone_ones_with_no_live_worker(
    client: redis.Redis, redis_url: str, tmp_path: Path
) -> None:
    now = time.time()
    for key, prefix in ((workers_key(), "worker"), (watchers_key(), "watcher")):
        client.hset(key, f"{prefix}-late", json.dumps({"seen": now - 60}))
        client.hset(key, f"{prefix}-killed", json.dumps({"seen": now - GONE_SECONDS - 1}))
    env = {**os.environ, "EVALRELAY_REDIS_URL": redis_url, "COLUMNS": "200"}
    shown = evalrelay("status", env=env, cwd=tmp_path)
    assert shown.returncode == 0, shown.stderr
    assert "worker-late" in shown.stdout and "(gone?)" in shown.stdout
    assert "killed" not in shown.stdout
    assert client.hkeys(workers_key()) == ["worker-late"]
    assert client.hkeys(watchers_key()) == ["watcher-late"]

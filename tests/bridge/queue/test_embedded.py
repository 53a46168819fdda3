"""The embedded runtime: a private Redis shared by commands, stopped by the last one, and an
in-process worker that leaves nothing running behind it."""

from __future__ import annotations

import stat
import threading
from pathlib import Path

import redis

from bridge.keys import workers_key
from bridge.queue.embedded import embedded_redis
from bridge.queue.local_worker import local_worker
from tests.conftest import wait_for


def answers(url: str) -> bool:
    try:
        return bool(redis.Redis.from_url(url, socket_connect_timeout=1).ping())
    except (redis.RedisError, OSError):
        return False


def test_private_redis_is_shared_and_stopped_by_its_last_user(tmp_path: Path) -> None:
    with embedded_redis(tmp_path) as first:
        assert stat.S_IMODE((tmp_path / "redis").stat().st_mode) == 0o700
        redis.Redis.from_url(first).set("kept", "yes")
        with embedded_redis(tmp_path) as second:
            assert second == first
        assert answers(first)  # the inner user left; the outer one still needs it
    assert not answers(first)
    with embedded_redis(tmp_path) as again:  # the append-only file brings data back
        assert redis.Redis.from_url(again, decode_responses=True).get("kept") == "yes"


def test_local_worker_reports_itself_and_leaves_no_thread_behind(
    redis_url: str, client: redis.Redis
) -> None:
    before = {t.name for t in threading.enumerate()}
    with local_worker(redis_url, ["api"], concurrency=2):
        wait_for(lambda: client.hlen(workers_key()) == 1, 10, "the worker's report")
    assert client.hlen(workers_key()) == 0
    wait_for(
        lambda: (
            not (
                {"evalrelay-reaper", "evalrelay-worker-heartbeat"}
                & ({t.name for t in threading.enumerate()} - before)
            )
        ),
        10,
        "the background threads to stop",
    )

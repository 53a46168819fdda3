"""The embedded runtime: a private Redis shared by commands, stopped by the last one, and an
in-process worker that leaves nothing running behind it."""

from __future__ import annotations

import json
import os
import signal
import stat
import subprocess
import sys
import threading
from pathlib import Path

import redis

from evalrelay.bridge.keys import workers_key
from evalrelay.bridge.queue.embedded import embedded_redis
from evalrelay.bridge.queue.local_worker import forked_worker
from tests.conftest import WriteFiles, embedded_env, one_turn_cases, running_with, wait_for


def process_exists(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


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
    with forked_worker(["api"], concurrency=2) as worker:
        worker.serve(redis_url)
        worker.ready()
        wait_for(lambda: client.hlen(workers_key()) == 1, 10, "the worker's report")
        (name, report), *_ = client.hgetall(workers_key()).items()
        worker_pid = json.loads(report)["pid"]
        assert name == f"embedded-{os.getpid()}@{os.uname().nodename}"
        assert worker_pid != os.getpid()  # a process of its own: a core of its own
    assert client.hlen(workers_key()) == 0
    assert not process_exists(worker_pid)
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


def test_a_run_killed_outright_leaves_no_worker_behind(
    project: WriteFiles, private_home: Path
) -> None:
    """SIGKILL gives the command no chance to stop its worker: the worker, in a process
    of its own, sees the command gone, finishes the job it runs, and exits; then the
    private Redis, which the worker used to the end, stops too."""
    root = project(
        {
            "targets.yaml": "targets:\n  - {name: slow, provider: mock, latency_ms: 500}\n",
            "evals/slow.yaml": one_turn_cases(50),
        }
    )
    command = subprocess.Popen(
        [sys.executable, "-m", "evalrelay", "run", "evals/slow.yaml", "--target", "slow"],
        env=embedded_env(private_home), cwd=root,
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )  # fmt: skip
    url = f"unix://{private_home / 'redis' / 'redis.sock'}"
    shared = redis.Redis(unix_socket_path=url.removeprefix("unix://"), decode_responses=True)
    wait_for(lambda: answers(url) and shared.hlen(workers_key()) == 1, 30, "the worker")
    worker_pid = json.loads(next(iter(shared.hvals(workers_key()))))["pid"]
    command.send_signal(signal.SIGKILL)
    command.wait(10)
    wait_for(lambda: not process_exists(worker_pid), 15, "the worker to exit")
    wait_for(lambda: not answers(url), 10, "the private Redis to stop with its last user")
    with embedded_redis(private_home) as again:  # what the worker did last is kept
        name = f"embedded-{command.pid}@{os.uname().nodename}"
        assert not redis.Redis.from_url(again).hexists(workers_key(), name)


def test_the_private_redis_of_a_watcher_killed_outright_stops(
    project: WriteFiles, private_home: Path
) -> None:
    """SIGKILL leaves the watcher no chance to stop the Redis it started: its keeper sees
    no command holds the Redis any more and stops it; the data stays (append-only file)."""
    root = project({"targets.yaml": "targets:\n  - {name: quick, provider: mock}\n"})
    watcher = subprocess.Popen(
        [sys.executable, "-m", "evalrelay", "watch", "inbox", "--target", "quick"],
        env=embedded_env(private_home), cwd=root,
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )  # fmt: skip
    socket = private_home / "redis" / "redis.sock"
    wait_for(lambda: answers(f"unix://{socket}"), 30, "the private Redis")
    redis.Redis(unix_socket_path=str(socket)).set("kept", "yes")
    (server,) = running_with(f"unixsocket:{socket}")  # redis-server names itself so
    watcher.send_signal(signal.SIGKILL)
    watcher.wait(10)
    wait_for(lambda: not process_exists(server), 10, "the redis-server to exit")
    with embedded_redis(private_home) as again:
        assert redis.Redis.from_url(again, decode_responses=True).get("kept") == "yes"

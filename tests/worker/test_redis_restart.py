"""A worker outlives a Redis restart: queued jobs survive (append-only file) and new ones run."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
import redis

from bridge.evalfile.cases import load_eval_file
from bridge.keys import results_stream_key
from bridge.queue.campaigns import plan_jobs, store_jobs
from bridge.queue.celery_queue import JobQueue
from tests.conftest import Processes, WriteFiles, one_turn_cases, wait_for


class PrivateRedis:
    """A redis-server of the test's own, on a Unix socket, with an append-only file unless
    told to keep nothing (then a restart loses every key)."""

    def __init__(self, folder: Path, keep: bool = True) -> None:
        self.folder = folder
        self.keep = keep
        self.socket = folder / "redis.sock"
        self.url = f"unix://{self.socket}"
        self.process: subprocess.Popen[bytes] | None = None

    def start(self) -> None:
        binary = shutil.which("redis-server")
        assert binary, "redis-server must be installed for this test"
        self.process = subprocess.Popen(
            [
                binary,
                "--port",
                "0",
                "--unixsocket",
                str(self.socket),
                "--dir",
                str(self.folder),
                "--appendonly",
                "yes" if self.keep else "no",
                "--appendfsync",
                "always",
                "--save",
                "",
            ],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            start_new_session=True,
        )
        wait_for(self.answers, 20, "the private redis-server")

    def stop(self) -> None:
        if self.process is not None and self.process.poll() is None:
            os.killpg(self.process.pid, signal.SIGTERM)
            self.process.wait(20)

    def answers(self) -> bool:
        try:
            return bool(redis.Redis.from_url(self.url, socket_connect_timeout=1).ping())
        except (redis.RedisError, OSError):
            return False


@pytest.fixture
def private_redis(tmp_path: Path) -> Iterator[PrivateRedis]:
    server = PrivateRedis(tmp_path)
    server.start()
    yield server
    server.stop()


def test_worker_keeps_working_across_a_redis_restart(
    project: WriteFiles, processes: Processes, private_redis: PrivateRedis
) -> None:
    root = project(
        {
            "targets.yaml": "targets:\n  - {name: slow, provider: mock, latency_ms: 200}\n",
            "evals.yaml": one_turn_cases(20),
        }
    )
    processes.env["EVALRELAY_REDIS_URL"] = private_redis.url
    client = redis.Redis.from_url(private_redis.url, decode_responses=True)
    processes.worker(client, "survivor@test", "--concurrency", "2")
    jobs = plan_jobs("restart", [load_eval_file(root / "evals.yaml")], "slow", None)
    store_jobs(client, jobs)  # as a campaign does: the reaper can send any of them again
    JobQueue.connect(private_redis.url).send(jobs[:10])
    wait_for(lambda: client.xlen(results_stream_key("restart")) >= 2, 30, "the first results")
    private_redis.stop()
    time.sleep(1)
    private_redis.start()
    client = redis.Redis.from_url(private_redis.url, decode_responses=True)
    JobQueue.connect(private_redis.url).send(jobs[10:])
    wait_for(
        lambda: len({e["job_id"] for _, e in client.xrange(results_stream_key("restart"))}) == 20,
        120,
        "every job's result after the restart",
    )


def test_run_says_so_when_redis_restarts_without_its_data(
    project: WriteFiles, processes: Processes, tmp_path: Path
) -> None:
    """Redis keeping nothing: a restart loses the campaign and its queued jobs; `run` must
    say what happened and where the results so far are, not crash or wait for ever."""
    server = PrivateRedis(tmp_path, keep=False)
    server.start()
    try:
        root = project(
            {
                "targets.yaml": "targets:\n  - {name: slow, provider: mock, latency_ms: 300}\n",
                "evals.yaml": one_turn_cases(40),
            }
        )
        processes.env["EVALRELAY_REDIS_URL"] = server.url
        client = redis.Redis.from_url(server.url, decode_responses=True)
        processes.worker(client, "w@test", "--concurrency", "2")
        run = processes.start("run", str(root / "evals.yaml"), "--target", "slow", name="run")
        wait_for(
            lambda: any(p.stat().st_size for p in (root / "results").glob("*.jsonl")),
            60,
            "the first results",
        )
        server.stop()
        server.start()
        assert run.wait(60) == 1
    finally:
        server.stop()
    said = processes.log("run")
    assert "Traceback" not in said
    (jsonl,) = (root / "results").glob("*.jsonl")
    assert f"campaign {jsonl.stem} is gone from Redis" in " ".join(said.split())
    assert "run Redis with appendonly yes" in " ".join(said.split())

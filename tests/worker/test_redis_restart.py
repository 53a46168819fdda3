"""A worker outlives a Redis restart: queued jobs survive (append-only file) and new ones run."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import redis

from evalrelay.bridge.evalfile.cases import load_eval_file
from evalrelay.bridge.keys import results_stream_key
from evalrelay.bridge.planning.campaigns import plan_jobs
from evalrelay.bridge.queue.campaigns import store_jobs
from evalrelay.bridge.queue.celery_queue import JobQueue
from tests.conftest import (
    FAST_RECOVERY,
    PrivateRedis,
    Processes,
    WriteFiles,
    free_port,
    one_turn_cases,
    wait_for,
)

RESTARTS = 3
RESTART_JOBS = 600

LOST = "consumer: Connection to broker lost"
"""What a worker's Celery consumer logs when Redis goes away under it."""
CANNOT_CONNECT = "consumer: Cannot connect to"
"""What it logs instead when Redis goes away while it is connecting."""
CONNECTED = "INFO Connected to"
"""And when it is connected to Redis: once at its start, then once back after each loss."""
OUT_OF_REACH = "Redis out of reach to publish"
"""What a worker logs when Redis goes away as it publishes: one whose every slot is busy
has no read waiting on the broker, and meets the stop here first (or only here)."""
PUBLISHED = "(published)"


def said(processes: Processes, name: str) -> str:
    """A process's log on one line: rich wraps a long message over several."""
    return " ".join(processes.log(name).split())


def test_worker_keeps_working_across_a_redis_restart(
    project: WriteFiles, private_redis: PrivateRedis, processes: Processes
) -> None:
    # `processes` after `private_redis`: the worker is stopped before its Redis, so it
    # does not wait at its end for Redis to come back.
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
    wait_for(lambda: LOST in said(processes, "survivor@test"), 30, "the worker to see it")
    private_redis.start()
    client = redis.Redis.from_url(private_redis.url, decode_responses=True)
    JobQueue.connect(private_redis.url).send(jobs[10:])
    wait_for(
        lambda: len({e["job_id"] for _, e in client.xrange(results_stream_key("restart"))}) == 20,
        120,
        "every job's result after the restart",
    )


def test_run_says_so_when_redis_restarts_without_its_data_and_its_files_changed(
    project: WriteFiles, processes: Processes, tmp_path: Path
) -> None:
    """Redis keeping nothing: a restart loses the campaign and its queued jobs. `run`
    rebuilds it from its eval files (tests/bridge/queue/test_rebuild.py); when they changed
    meanwhile it cannot, and must say what happened and where the results so far are, not
    crash or wait for ever."""
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
        (root / "evals.yaml").write_text(one_turn_cases(41))
        server.stop()
        server.start()
        assert run.wait(60) == 1
    finally:
        processes.stop_all()  # before Redis, or the worker waits for it to come back
        server.stop()
    said = " ".join(processes.log("run").split())
    assert "Traceback" not in said
    (jsonl,) = (root / "results").glob("*.jsonl")
    assert f"campaign {jsonl.stem} had 40 jobs; its eval files now give 41" in said, said
    assert "run them as a new campaign" in said


def test_four_workers_ride_out_three_redis_restarts_over_tcp(
    project: WriteFiles, processes: Processes, tmp_path: Path
) -> None:
    """Every worker is still there after each restart, and every job has its result."""
    server = PrivateRedis(tmp_path, port=free_port())
    server.start()
    try:
        root = project(
            {
                "targets.yaml": "targets:\n  - {name: quick, provider: mock, latency_ms: 50}\n",
                "evals.yaml": one_turn_cases(RESTART_JOBS),
            }
        )
        # A job a restart lost on its way to a worker is sent again in seconds, not 30.
        processes.env |= {"EVALRELAY_REDIS_URL": server.url, **FAST_RECOVERY}
        client = redis.Redis.from_url(server.url, decode_responses=True)
        workers = [processes.worker(client, f"w{n}@test", "-c", "2") for n in range(4)]

        def logs() -> list[str]:
            return [" ".join(said(processes, f"w{n}@test").split()) for n in range(4)]

        def all_since(before: list[str], *lines: str) -> Callable[[], bool]:
            """Whether every worker has logged one of `lines` since its logs were `before`."""
            return lambda: all(
                any(line in now[len(then) :] for line in lines)
                for then, now in zip(before, logs(), strict=True)
            )

        jobs = plan_jobs("restarts", [load_eval_file(root / "evals.yaml")], "quick", None)
        store_jobs(client, jobs)
        JobQueue.connect(server.url).send(jobs)
        for restart in range(1, RESTARTS + 1):
            wait_for(lambda: client.xlen(results_stream_key("restarts")) > 0, 60, "results")
            before_stop = logs()
            server.stop()
            # A worker still reconnecting after the last restart meets this one as a connect
            # that fails, not as a connection lost.
            stopped = all_since(before_stop, LOST, CANNOT_CONNECT, OUT_OF_REACH)
            wait_for(stopped, 30, f"every worker to see stop {restart}")
            before_start = logs()
            server.start()
            back = all_since(before_start, CONNECTED, PUBLISHED)
            wait_for(back, 60, f"every worker back, {restart}")
            assert [w.poll() for w in workers] == [None] * 4, "a worker exited at a restart"
        wait_for(
            lambda: (
                len({e["job_id"] for _, e in client.xrange(results_stream_key("restarts"))})
                == RESTART_JOBS
            ),
            180,
            "every job's result",
        )
        assert [w.poll() for w in workers] == [None] * 4, "a worker exited"
    finally:
        processes.stop_all()  # before Redis, or each worker waits for it to come back
        server.stop()
    for n in range(4):
        assert "Unrecoverable error" not in processes.log(f"w{n}@test")

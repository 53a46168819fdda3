"""A worker outlives a Redis restart: queued jobs survive (append-only file) and new ones run."""

from __future__ import annotations

import time
from pathlib import Path

import redis

from bridge.evalfile.cases import load_eval_file
from bridge.keys import results_stream_key
from bridge.queue.campaigns import plan_jobs, store_jobs
from bridge.queue.celery_queue import JobQueue
from tests.conftest import PrivateRedis, Processes, WriteFiles, free_port, one_turn_cases, wait_for

RESTARTS = 3
RESTART_JOBS = 600


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
        processes.env["EVALRELAY_REDIS_URL"] = server.url
        client = redis.Redis.from_url(server.url, decode_responses=True)
        workers = [processes.worker(client, f"w{n}@test", "-c", "2") for n in range(4)]
        jobs = plan_jobs("restarts", [load_eval_file(root / "evals.yaml")], "quick", None)
        store_jobs(client, jobs)
        JobQueue.connect(server.url).send(jobs)
        for _ in range(RESTARTS):
            wait_for(lambda: client.xlen(results_stream_key("restarts")) > 0, 60, "results")
            server.stop()
            time.sleep(1)
            server.start()
            time.sleep(3)
            assert [w.poll() for w in workers] == [None] * 4, "a worker exited at a restart"
        wait_for(
            lambda: (
                len({e["job_id"] for _, e in client.xrange(results_stream_key("restarts"))})
                == RESTART_JOBS
            ),
            180,
            "every job's result",
        )
    finally:
        server.stop()
    for n in range(4):
        assert "Unrecoverable error" not in processes.log(f"w{n}@test")

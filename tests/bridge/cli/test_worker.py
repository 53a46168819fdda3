"""`evalrelay worker`: task events stay off until asked for, as Flower asks; an api worker
of many jobs at once is a process per core."""

from __future__ import annotations

import os
import signal
import subprocess
import threading
from typing import Any

import pytest
import redis
from celery import Celery

from evalrelay.bridge.cli.worker import default_processes
from evalrelay.bridge.evalfile.cases import load_eval_file
from evalrelay.bridge.keys import inflight_key, results_stream_key, workers_key
from evalrelay.bridge.planning.campaigns import plan_jobs
from evalrelay.bridge.queue.campaigns import store_jobs
from evalrelay.bridge.queue.celery_queue import JobQueue
from tests.conftest import (
    FAST_RECOVERY,
    PrivateRedis,
    Processes,
    WriteFiles,
    one_turn_cases,
    wait_for,
)
from tests.worker.test_tasks import collect_all, submit_campaign


def task_events(app: Celery, seen: list[dict[str, Any]], stop: threading.Event) -> None:
    """Celery's own event receiver, the way Flower and `celery events` listen."""
    with app.connection_for_read() as connection:
        receiver = app.events.Receiver(connection, handlers={"*": seen.append}, app=app)
        while not stop.is_set():
            try:
                receiver.capture(limit=None, timeout=0.5, wakeup=False)
            except TimeoutError:
                continue


def test_flower_s_enable_events_turns_task_events_on(
    processes: Processes, client: redis.Redis, redis_url: str, project: WriteFiles
) -> None:
    processes.start("worker", "-n", "ev@host", "-c", "2", name="worker")
    wait_for(lambda: client.hexists(workers_key(), "ev@host"), 30, "the worker")
    app = Celery("watcher", broker=redis_url)
    seen: list[dict[str, Any]] = []
    stop = threading.Event()
    listening = threading.Thread(target=task_events, args=(app, seen, stop), daemon=True)
    listening.start()
    try:
        root = project({"evals.yaml": one_turn_cases(2)})
        collect_all(processes, client, submit_campaign(redis_url, root, 2, target="mock"), 60)
        assert not [e for e in seen if e["type"].startswith("task-")]

        app.control.enable_events(destination=["ev@host"])  # what Flower does every few s
        root = project({"more/evals.yaml": one_turn_cases(2, case_id="d{i}")})
        more = submit_campaign(redis_url, root / "more", 2, target="mock")
        collect_all(processes, client, more, 60)
        wait_for(lambda: [e for e in seen if e["type"] == "task-succeeded"], 10, "task events")
    finally:
        stop.set()
        listening.join(5)


def test_a_worker_told_to_stop_while_redis_is_away_stops_and_its_jobs_run_later(
    project: WriteFiles, processes: Processes, private_redis: PrivateRedis
) -> None:
    """Its running jobs could not report (they retry for minutes): the worker stops without
    them soon after SIGTERM, and a worker of the Redis come back runs them."""
    root = project(
        {
            "targets.yaml": "targets:\n  - {name: slow, provider: mock, latency_ms: 3000}\n",
            "evals.yaml": one_turn_cases(2),
        }
    )
    processes.env |= {"EVALRELAY_REDIS_URL": private_redis.url, **FAST_RECOVERY}
    client = redis.Redis.from_url(private_redis.url, decode_responses=True)
    worker = processes.worker(client, "stopped@test", "--concurrency", "2")
    jobs = plan_jobs("away", [load_eval_file(root / "evals.yaml")], "slow", None)
    store_jobs(client, jobs)
    JobQueue.connect(private_redis.url).send(jobs)
    wait_for(lambda: client.zcard(inflight_key()) == 2, 30, "both jobs to start")
    private_redis.stop()
    worker.send_signal(signal.SIGTERM)
    try:
        assert worker.wait(40) == 1
    except subprocess.TimeoutExpired:
        pytest.fail("the worker still runs 40 s after SIGTERM with Redis away")
    assert "stopping without the jobs still running" in " ".join(
        processes.log("stopped@test").split()
    )
    private_redis.start()
    client = redis.Redis.from_url(private_redis.url, decode_responses=True)
    processes.worker(client, "after@test", "--concurrency", "2")
    wait_for(
        lambda: (
            {e["job_id"] for _, e in client.xrange(results_stream_key("away"))}
            == {j.job_id for j in jobs}
        ),
        60,
        "both jobs' results from the second worker",
    )


def test_an_api_worker_gets_a_process_per_64_jobs_at_once_and_at_most_one_per_core() -> None:
    cores = len(os.sched_getaffinity(0))
    assert default_processes(["api"], "threads", 32) == 1
    assert default_processes(["api"], "threads", 128) == min(2, cores)
    assert default_processes(["api"], "threads", 64 * 1000) == cores
    assert default_processes(["api", "agent.cli"], "threads", 512) == 1
    assert default_processes(["api"], "prefork", 512) == 1


def test_a_worker_of_128_api_jobs_starts_its_default_processes(
    processes: Processes, client: redis.Redis
) -> None:
    count = default_processes(["api"], "threads", 128)
    names = [f"big-{n}@test" for n in range(1, count + 1)] if count > 1 else ["big@test"]
    parent = processes.start("worker", "-c", "128", "-n", "big@test", name="big")
    wait_for(lambda: all(client.hexists(workers_key(), n) for n in names), 60, f"{names}")
    parent.send_signal(signal.SIGTERM)
    assert parent.wait(30) == 0
    if count > 1:
        assert f"{count} processes, 128 jobs at once in all" in processes.log("big")

"""`run_batch` with real workers: a message of several API jobs runs them on the worker's
event loop, no more at once than its slots, each published once; a worker stopped or
killed mid-batch loses none of them and runs none twice."""

from __future__ import annotations

import asyncio
import os
import signal
import threading
import time
from datetime import UTC, datetime
from pathlib import Path

import redis

from evalrelay.bridge.contract.job import Job
from evalrelay.bridge.delivery.round_trips import RoundTrips
from evalrelay.bridge.evalfile.cases import load_eval_file
from evalrelay.bridge.keys import holders_key, inflight_key, results_stream_key
from evalrelay.bridge.planning.campaigns import plan_jobs
from evalrelay.bridge.queue.campaigns import CampaignInfo, announce, store_jobs
from evalrelay.bridge.queue.celery_queue import JobQueue
from evalrelay.worker.job_run import run_job
from tests.conftest import (
    FAST_RECOVERY,
    PrivateRedis,
    Processes,
    WriteFiles,
    one_turn_cases,
    unretried_client,
    wait_for,
)
from tests.worker.test_tasks import collect_all


def one_batch(
    root: Path, client: redis.Redis, redis_url: str, count: int
) -> tuple[CampaignInfo, list[Job]]:
    """A campaign of `count` mock cases, sent as one `run_batch` message."""
    loaded = load_eval_file(root / "evals.yaml")
    jobs = plan_jobs(f"batch-{time.time_ns()}", [loaded], "slow", None)
    info = CampaignInfo(
        campaign_id=jobs[0].campaign_id,
        created_at=datetime.now(UTC),
        sources=[str(root / "evals.yaml")],
        targets=["slow"],
        total=count,
        out_dir=str(root / "results"),
        collector="service",
    )  # type: ignore[arg-type]
    store_jobs(client, jobs)
    announce(client, info, [loaded], jobs)
    JobQueue.connect(redis_url).send(jobs, per_message=count)
    return info, jobs


def project_of(project: WriteFiles, count: int, latency_ms: int) -> Path:
    targets = f"targets:\n  - {{name: slow, provider: mock, latency_ms: {latency_ms}}}\n"
    return project({"targets.yaml": targets, "evals.yaml": one_turn_cases(count)})


def most_at_once(lines: list[dict[str, object]]) -> int:
    """The most jobs whose runs overlapped at one moment."""
    edges = sorted(
        (datetime.fromisoformat(str(line[key])), step)
        for line in lines
        for key, step in (("started_at", 1), ("finished_at", -1))
    )
    running = most = 0
    for _, step in edges:  # a finish sorts before a start at the same instant
        running += step
        most = max(most, running)
    return most


def test_a_job_that_begins_while_redis_is_away_runs_when_it_is_back(
    project: WriteFiles, private_redis: PrivateRedis
) -> None:
    """Redis goes away, longer than the client's own retries, as a job of a batch is to
    take its lease: the job waits, then runs and is published once. Given up, it would
    stay held by its live worker, and nobody would send it again."""
    root = project_of(project, 1, 0)
    client = unretried_client(private_redis.url)
    (job,) = plan_jobs("away", [load_eval_file(root / "evals.yaml")], "slow", None)
    store_jobs(client, [job])
    queue = JobQueue.connect(private_redis.url)
    private_redis.stop()
    ran: list[object] = []

    def run() -> None:
        try:
            ran.append(asyncio.run(run_job(RoundTrips(client), client, queue, job, "w@test", "m1")))
        except Exception as exc:  # the test says what it was
            ran.append(exc)

    running = threading.Thread(target=run)
    running.start()
    time.sleep(2)
    private_redis.start()
    running.join(30)
    assert ran == ["ok"]
    assert client.xlen(results_stream_key(job.campaign_id)) == 1


def test_a_batch_runs_no_more_jobs_at_once_than_the_workers_slots(
    project: WriteFiles, processes: Processes, client: redis.Redis, redis_url: str
) -> None:
    root = project_of(project, 6, 400)
    processes.worker(client, "w@test", "-c", "2")
    info, _ = one_batch(root, client, redis_url, 6)
    lines = collect_all(processes, client, info, 60)  # each job exactly once
    assert all(line["status"] == "ok" for line in lines)
    assert most_at_once(lines) == 2
    # One message ran them all: its task logs what it ran as it ends, after the last line.
    wait_for(lambda: "'ok: 6'" in processes.log("w@test"), 10, "the batch's task to end")
    wait_for(lambda: client.hlen(holders_key()) == 0, 10, "every hold let go")


def test_sigterm_mid_batch_hands_back_the_jobs_not_started(
    project: WriteFiles, processes: Processes, client: redis.Redis, redis_url: str
) -> None:
    root = project_of(project, 6, 6000)
    first = processes.worker(client, "first@test", "-c", "2")
    info, _ = one_batch(root, client, redis_url, 6)
    wait_for(lambda: client.zcard(inflight_key()) >= 2, 30, "two jobs of the batch to start")
    os.killpg(first.pid, signal.SIGTERM)
    processes.worker(client, "second@test", "-c", "4")
    lines = collect_all(processes, client, info, 60)  # each job exactly once
    first.wait(30)
    assert all(line["status"] == "ok" for line in lines)
    by_worker = sorted(str(line["worker"]) for line in lines)
    assert by_worker == ["first@test"] * 2 + ["second@test"] * 4
    first_ended = min(
        datetime.fromisoformat(str(line["finished_at"]))
        for line in lines
        if line["worker"] == "first@test"
    )
    for line in lines:
        if line["worker"] == "second@test":  # handed back at once, not after a lease
            assert datetime.fromisoformat(str(line["started_at"])) < first_ended


def test_sigkill_mid_batch_runs_again_only_the_jobs_not_published(
    project: WriteFiles, processes: Processes, client: redis.Redis, redis_url: str
) -> None:
    root = project_of(project, 8, 1500)
    first = processes.worker(client, "first@test", "-c", "2", extra_env=FAST_RECOVERY)
    info, _ = one_batch(root, client, redis_url, 8)
    stream = results_stream_key(info.campaign_id)
    wait_for(lambda: client.xlen(stream) >= 2, 30, "the batch's first two results")
    os.killpg(first.pid, signal.SIGKILL)
    first.wait(10)
    published_before = {fields["job_id"] for _, fields in client.xrange(stream)}
    processes.worker(client, "second@test", "-c", "4", extra_env=FAST_RECOVERY)
    lines = collect_all(processes, client, info, 90)  # each job exactly once
    assert all(line["status"] == "ok" for line in lines)
    for line in lines:
        expected = "first@test" if line["job_id"] in published_before else "second@test"
        assert line["worker"] == expected, line["job_id"]
    assert 2 <= len(published_before) < 8

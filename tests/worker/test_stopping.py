"""A worker stopped with SIGTERM (a compose `docker stop`, a pod's end): the jobs it runs
finish and publish; the ones it took and has not started go to another worker at once,
not when a lease or the worker's `alive` key runs out."""

from __future__ import annotations

import base64
import json
import os
import signal
import time
from datetime import UTC, datetime

import redis

from evalrelay.bridge.delivery.holds import note_hold, take_hold
from evalrelay.bridge.delivery.outstanding import carried_jobs
from evalrelay.bridge.delivery.payloads import batch_payloads, jobs_of
from evalrelay.bridge.evalfile.cases import load_eval_file
from evalrelay.bridge.keys import holders_key, inflight_key
from evalrelay.bridge.planning.campaigns import plan_jobs
from evalrelay.bridge.queue.campaigns import CampaignInfo, announce, store_jobs
from evalrelay.bridge.queue.celery_queue import JobQueue
from evalrelay.worker.stopping import hand_back
from tests.conftest import Processes, WriteFiles, direct_job, one_turn_cases, wait_for
from tests.worker.test_tasks import collect_all

TARGETS = "targets:\n  - {name: slow, provider: mock, latency_ms: 20000}\n"
"""Jobs that run 20 s: long enough for the second worker, however slow to start on a
loaded machine, to start the handed-back ones while the first's running ones still run."""
QUICK_REAPER = {"EVALRELAY_REAP_SECONDS": "0.5"}
"""Leases and `alive` keys at their usual 30 s: a job found only when one ran out would be
far too late for the test."""


def test_sigterm_hands_jobs_not_started_to_another_worker_at_once(
    project: WriteFiles, processes: Processes, client: redis.Redis, redis_url: str
) -> None:
    root = project({"targets.yaml": TARGETS, "evals.yaml": one_turn_cases(6)})
    first = processes.worker(client, "first@test", "-c", "2", extra_env=QUICK_REAPER)
    loaded = load_eval_file(root / "evals.yaml")
    jobs = plan_jobs(f"stop-{time.time_ns()}", [loaded], "slow", None)
    info = CampaignInfo(
        campaign_id=jobs[0].campaign_id,
        created_at=datetime.now(UTC),
        sources=[str(root / "evals.yaml")],
        targets=["slow"],
        total=len(jobs),
        out_dir=str(root / "results"),
        collector="service",
    )  # type: ignore[arg-type]
    store_jobs(client, jobs)
    announce(client, info, [loaded], jobs)
    queue = JobQueue.connect(redis_url)
    # Two jobs waiting for capacity, back to the queue with a countdown (as
    # `wait_for_capacity` sends them) and taken by the worker before two others start:
    # c4's countdown ends while both threads are busy (it waits in the pool), c5's not
    # before the stop (it waits in the worker's timer). c2 and c3 stay on the queue.
    sent = time.monotonic()
    queue.send(jobs[4:5], countdown=1)
    queue.send(jobs[5:], countdown=4)
    wait_for(lambda: client.llen("api") == 0, 10, "the worker to take the waiting jobs")
    queue.send(jobs[:4])
    wait_for(lambda: client.zcard(inflight_key()) >= 2, 30, "two jobs to start")
    time.sleep(max(0.0, sent + 2 - time.monotonic()))
    os.killpg(first.pid, signal.SIGTERM)
    stopped = datetime.now(UTC)
    processes.worker(client, "second@test", "-c", "4", extra_env=QUICK_REAPER)
    lines = collect_all(processes, client, info, 60)  # each job exactly once
    first.wait(30)
    by_case = {str(line["case_id"]): line for line in lines}
    assert [by_case[c]["worker"] for c in ("c0", "c1")] == ["first@test"] * 2
    assert all(line["status"] == "ok" for line in lines)
    running_ended = min(
        datetime.fromisoformat(str(by_case[c]["finished_at"])) for c in ("c0", "c1")
    )
    for case in ("c2", "c3", "c4", "c5"):
        assert by_case[case]["worker"] == "second@test"
        started = datetime.fromisoformat(str(by_case[case]["started_at"]))
        # before the first worker's running jobs end (20 s)
        assert started < running_ended, (case, started, stopped)
    assert "first@test stopping: 2 waiting jobs back to the queue" in processes.log("first@test")
    wait_for(lambda: client.hlen("unacked") == 0, 10, "the broker's unacked hash to empty")


def test_a_job_reaching_a_thread_after_the_stop_goes_back_as_a_new_message(
    client: redis.Redis, redis_url: str
) -> None:
    job = direct_job(job_id="handed")
    client.hset(holders_key(), "handed", "old-message w@test/host/1/x")
    note_hold(client, "w@test", "handed", "old-message")  # and a note not yet written
    assert hand_back(client, JobQueue.connect(redis_url), [job], "old-message") == "handed back"
    (raw,) = client.lrange("api", 0, -1)
    message = json.loads(raw)
    assert message["headers"]["id"] != "old-message"
    assert carried_jobs(message) == ["handed"]  # an API job goes back in a batch of one
    (argument,) = json.loads(base64.b64decode(message["body"]))[0]
    assert [job.job_id for job in jobs_of(client, batch_payloads(argument)) if job] == ["handed"]
    time.sleep(0.2)  # the note would have been written by now
    assert client.hget(holders_key(), "handed") is None
    assert take_hold("handed", "old-message") is None

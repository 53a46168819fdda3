"""The reaper sends again jobs whose lease ran out, and only those."""

from __future__ import annotations

import time

import redis

from bridge.evalfile.cases import load_eval_file
from bridge.keys import done_key, inflight_key
from bridge.queue.campaigns import cancel, plan_jobs, store_jobs
from bridge.queue.jobs import Job
from bridge.queue.reaper import reap_expired
from tests.conftest import WriteFiles, one_turn_cases
from worker.lease import Lease


def jobs(project: WriteFiles, count: int, campaign: str = "c") -> list[Job]:
    root = project({"evals.yaml": one_turn_cases(count)})
    planned = plan_jobs(campaign, [load_eval_file(root / "evals.yaml")], "mock", None)
    return planned


def test_expired_lease_is_sent_again_live_and_done_ones_are_not(
    project: WriteFiles, client: redis.Redis
) -> None:
    expired, live, done = jobs(project, 3)
    store_jobs(client, [expired, live, done])
    for job, seconds in ((expired, 0.1), (live, 30), (done, 0.1)):
        assert Lease.acquire(client, job.job_id, "dead-worker", seconds=seconds)
    client.set(done_key(done.job_id), 1)
    time.sleep(0.3)
    sent: list[Job] = []
    assert reap_expired(client, sent.append) == [expired.job_id]
    assert sent == [expired]
    assert client.zscore(inflight_key(), live.job_id) is not None
    assert reap_expired(client, sent.append) == []  # taken once, not twice


def test_cancelled_campaign_jobs_are_not_sent_again(
    project: WriteFiles, client: redis.Redis
) -> None:
    (job,) = jobs(project, 1)
    store_jobs(client, [job])
    assert Lease.acquire(client, job.job_id, "dead-worker", seconds=0.1)
    cancel(client, "c")
    time.sleep(0.3)
    sent: list[Job] = []
    reap_expired(client, sent.append)
    assert sent == []

"""The reaper sends again jobs whose lease ran out, and only those."""

from __future__ import annotations

import json
import signal
import time

import pytest
import redis

from evalrelay.bridge.clock import now_ms
from evalrelay.bridge.contract.campaign_state import cancel
from evalrelay.bridge.contract.job import Job
from evalrelay.bridge.delivery.holders import ALIVE_SECONDS, hold
from evalrelay.bridge.delivery.lease import Lease
from evalrelay.bridge.delivery.outstanding import carried_jobs
from evalrelay.bridge.delivery.reaper import Outages, reap_expired
from evalrelay.bridge.evalfile.cases import load_eval_file
from evalrelay.bridge.keys import done_key, inflight_key, unseen_key
from evalrelay.bridge.planning.campaigns import plan_jobs
from evalrelay.bridge.queue.campaigns import store_jobs
from evalrelay.bridge.queue.celery_queue import JobQueue, batch_size
from tests.clocks import LEASE_SECONDS, SKEW, SLOW, WITHIN_LEASE, seconds_to_rescue
from tests.conftest import PrivateRedis, Processes, WriteFiles, one_turn_cases, wait_for


def jobs(project: WriteFiles, count: int, campaign: str = "c") -> list[Job]:
    root = project({"evals.yaml": one_turn_cases(count)})
    planned = plan_jobs(campaign, [load_eval_file(root / "evals.yaml")], "mock", None)
    return planned


def past_expiry(client: redis.Redis, *expiring: Job) -> bool:
    """Whether Redis's clock, the one the reaper compares, is past each job's lease expiry."""
    now = now_ms(client)
    return all(now > (client.zscore(inflight_key(), j.job_id) or 0) for j in expiring)


def test_expired_lease_is_sent_again_live_and_done_ones_are_not(
    project: WriteFiles, client: redis.Redis
) -> None:
    expired, live, done = jobs(project, 3)
    store_jobs(client, [expired, live, done])
    for job, seconds in ((expired, 0.1), (live, 30), (done, 0.1)):
        assert Lease.acquire(client, job.job_id, "dead-worker", seconds=seconds)
    client.hset(done_key(done.campaign_id, done.job_id), done.job_id, 1)
    wait_for(lambda: past_expiry(client, expired, done), 5, "the short leases to run out")
    sent: list[Job] = []
    assert reap_expired(client, sent.extend) == [expired.job_id]
    assert sent == [expired]
    assert client.zscore(inflight_key(), live.job_id) is not None
    assert reap_expired(client, sent.extend) == []  # taken once, not twice


def test_many_expired_api_jobs_go_back_in_batches(
    project: WriteFiles, client: redis.Redis, redis_url: str
) -> None:
    """A hundred jobs whose worker died go back as a few batch messages on the real queue,
    not a message each (a worker pays a message's overhead per message)."""
    many = jobs(project, 100)
    store_jobs(client, many)
    for job in many:
        assert Lease.acquire(client, job.job_id, "dead-worker", seconds=0.1)
    wait_for(lambda: past_expiry(client, *many), 5, "the short leases to run out")
    client.delete("api")
    resent = reap_expired(client, JobQueue.connect(redis_url).send)
    assert sorted(resent) == sorted(j.job_id for j in many)
    messages = [json.loads(raw) for raw in client.lrange("api", 0, -1)]
    carried = [job_id for message in messages for job_id in carried_jobs(message)]
    assert sorted(carried) == sorted(resent)
    assert len(messages) == -(-100 // batch_size(100))


def test_interrupted_campaign_jobs_are_not_sent_again(
    project: WriteFiles, client: redis.Redis
) -> None:
    """Ctrl-C on `run`: the jobs are left without lines, for `resume`."""
    (job,) = jobs(project, 1)
    store_jobs(client, [job])
    assert Lease.acquire(client, job.job_id, "dead-worker", seconds=0.1)
    cancel(client, "c")
    wait_for(lambda: past_expiry(client, job), 5, "the lease to run out")
    sent: list[Job] = []
    assert reap_expired(client, sent.extend) == []
    assert sent == []
    assert client.zscore(inflight_key(), job.job_id) is None  # taken off, not left for later


def test_a_job_of_a_campaign_cancelled_for_good_is_sent_again_for_its_cancelled_line(
    project: WriteFiles, client: redis.Redis
) -> None:
    """`evalrelay cancel`: the campaign ends when every job has a line, so a dead worker's
    job is sent again, and the worker that meets it writes its `cancelled` line."""
    (job,) = jobs(project, 1)
    store_jobs(client, [job])
    assert Lease.acquire(client, job.job_id, "dead-worker", seconds=0.1)
    cancel(client, "c", ends=True)
    wait_for(lambda: past_expiry(client, job), 5, "the lease to run out")
    sent: list[Job] = []
    reap_expired(client, sent.extend)
    assert [j.job_id for j in sent] == [job.job_id]


@pytest.mark.parametrize("victim_clock", [SKEW, -SKEW], ids=["dead-worker-ahead", "behind"])
def test_dead_worker_300_s_off_has_its_job_sent_again_as_fast_as_one_on_time(
    project: WriteFiles,
    processes: Processes,
    client: redis.Redis,
    redis_url: str,
    victim_clock: int,
) -> None:
    """A worker killed (SIGKILL) while it runs a job, its clock 300 s off: the reaper sends
    the job again when the lease runs out, as soon as for a worker with a true clock (not
    later, by the slower ways of finding a dead worker's jobs)."""
    root = project({"targets.yaml": SLOW, "evals.yaml": one_turn_cases(1)})
    kill = signal.SIGKILL
    true = seconds_to_rescue(
        processes, client, redis_url, root, victim_clock=0, rescuer_clock=0, cut=kill
    )
    skewed = seconds_to_rescue(
        processes, client, redis_url, root, victim_clock=victim_clock, rescuer_clock=0, cut=kill
    )
    assert true < WITHIN_LEASE and skewed < WITHIN_LEASE, (true, skewed)
    # Apart by less than one lease: the slower ways wait out the 20 s liveness window, and
    # where in its lease a worker is cut, and this machine's load, move each by seconds.
    assert abs(skewed - true) < LEASE_SECONDS, (true, skewed)


def test_after_an_outage_nothing_is_reaped_until_the_grace_has_passed(
    private_redis: PrivateRedis,
) -> None:
    """A reaper that failed to reach Redis, or finds it restarted, judges nothing for a
    grace: the live workers' `alive` keys and leases ran out while it was away, and they
    renew them within it. A fresh reaper of a Redis up for a while reaps at once."""
    client = redis.Redis.from_url(private_redis.url, decode_responses=True)
    time.sleep(1.2)
    outages = Outages(interval=0.1, grace=1.0)
    assert outages.calm(client)  # Redis up longer than the grace
    client.hset(unseen_key(), "j", "1")
    outages.failed()
    assert not outages.calm(client)
    assert not client.exists(unseen_key())  # found nowhere before the outage: starts over
    wait_for(lambda: outages.calm(client), 5, "the grace to pass")
    private_redis.stop()
    private_redis.start()
    assert not outages.calm(client)  # restarted: a new run_id
    fresh = Outages(interval=0.1, grace=10.0)
    assert not fresh.calm(client)  # up for less than the grace
    wait_for(lambda: outages.calm(client), 5, "the grace to pass")
    wait_for(lambda: fresh.calm(client), 15, "the fresh reaper's grace to pass")


def test_a_reaper_stopped_or_waiting_longer_than_a_heartbeat_takes_it_for_an_outage(
    client: redis.Redis,
) -> None:
    outages = Outages(interval=0.1, grace=1.0)
    assert outages.calm(client)
    outages.looked()
    time.sleep(0.1 + ALIVE_SECONDS / 3 + 0.2)
    assert not outages.calm(client)


def test_a_job_whose_lease_ran_out_and_whose_holder_died_is_sent_once(
    project: WriteFiles, client: redis.Redis
) -> None:
    """Its lease ran out and its holder's `alive` key too: both say it is to be sent again,
    in the same pass; it goes once."""
    (job,) = jobs(project, 1)
    store_jobs(client, [job])
    assert Lease.acquire(client, job.job_id, "dead-worker", seconds=0.1)
    hold(client, [job.job_id], "m1", "dead-worker/host/1/x")  # no `alive` key: dead
    wait_for(lambda: past_expiry(client, job), 5, "the lease to run out")
    sent: list[Job] = []
    assert reap_expired(client, sent.extend) == [job.job_id]
    assert sent == [job]

"""One job's run, for a batch's API jobs and an agent's job alike: begin its lease,
execute it, publish its result once, charge its campaign, let go of its message.

Both tasks (`run_batch`, `run_case`) drive this one coroutine on the process's event
loop (`worker.loop`); they differ only in how a job executes: an API job's call on the
loop with the vendor's async client (`execute_async`), an agent's job or a trial on a
thread of its own (`execute_on_thread`), as either blocks for minutes.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Awaitable, Callable

import redis

from evalrelay.bridge.clock import now_seconds
from evalrelay.bridge.contract.campaign_state import cancel_ends
from evalrelay.bridge.contract.job import Job
from evalrelay.bridge.delivery.holds import take_hold
from evalrelay.bridge.delivery.lease import LeaseBegin
from evalrelay.bridge.delivery.publish import PUBLISHED, publish
from evalrelay.bridge.delivery.round_trips import RoundTrips
from evalrelay.bridge.keys import holders_key
from evalrelay.bridge.lua_scripts import BEGIN_LEASE, LET_GO
from evalrelay.bridge.queue.budget import charge
from evalrelay.bridge.queue.celery_queue import JobQueue
from evalrelay.bridge.results.result import Result, Status
from evalrelay.worker.execute import execute, execute_async, never_started
from evalrelay.worker.providers.admission import give_back, holds_reservation, settled
from evalrelay.worker.providers.base import NoCapacity, Steered

log = logging.getLogger(__name__)

Execute = Callable[[Job, str, redis.Redis], Awaitable[Result]]
"""How a job executes once it holds its lease: (job, worker, client) to its result."""


async def execute_on_thread(job: Job, worker: str, client: redis.Redis) -> Result:
    """An agent's job or a trial, which blocks for minutes, on a thread of the loop's pool."""
    return await asyncio.to_thread(execute, job, worker, client)


JOB_TASK = {
    "bind": True,
    "shared": False,
    "lazy": False,
    "acks_late": True,
    "reject_on_worker_lost": True,
    "ignore_result": True,
}
"""How a job task (`run_case`, `run_batch`) is registered: acknowledged after it ran, and
sent again should its worker be lost; no result backend."""


async def run_job(
    rounds: RoundTrips,
    client: redis.Redis,
    queue: JobQueue,
    job: Job,
    worker: str,
    message: str,
    execute: Execute = execute_async,
) -> str:
    """Unless its campaign is cancelled or paused, or it is done or running elsewhere, run
    the job under its lease, publish its result once and charge it; say which. The worker
    no longer holds `message` when this returns: a job waiting for capacity, or steered
    while it waited to call, goes back to its queue as a new message first."""
    noted = take_hold(job.job_id, message)
    begin = LeaseBegin.of(
        job.job_id,
        worker,
        job.campaign_id,
        job.attempt,
        holder=noted[1] if noted else "",
        queue=job.target.queue,
    )
    try:
        outcome = str(
            await rounds.run_through_outage(BEGIN_LEASE, begin.keys, begin.args, begin.waiting)
        )
    except BaseException:
        if noted:
            noted[0].put_back(job.job_id, noted[1])  # still held: written later
        raise
    lease = begin.lease(client, outcome)
    if lease is None:
        log.info("job %s: %s; this delivery is ignored", job.job_id, outcome)
        await skipped(rounds, client, job, worker, outcome, message)
        return outcome
    try:
        with lease.heartbeat():  # also while publishing waits for Redis
            result = await execute(job, worker, client)
            published = await publish(rounds, result, job.target.queue, lease.token, message)
    except NoCapacity as busy:
        await asyncio.to_thread(lease.release)
        return await wait_for_capacity(rounds, client, queue, job, worker, busy, message)
    except Steered as steered:
        await asyncio.to_thread(lease.release)
        return await step_aside(rounds, client, queue, job, steered, message)
    except BaseException:
        with contextlib.suppress(redis.RedisError):
            await asyncio.to_thread(lease.release)
        raise
    if result.spent_usd() is not None or holds_reservation(job.job_id):
        # the answer and its judges, in one charge
        await asyncio.to_thread(spend, client, result, published == PUBLISHED, worker)
    log.info("job %s: %s (%s)", job.job_id, result.status.value, published)
    return result.status.value


async def step_aside(
    rounds: RoundTrips,
    client: redis.Redis,
    queue: JobQueue,
    job: Job,
    steered: Steered,
    message: str,
) -> str:
    """Back to the queue, unstarted, after its campaign was steered while it waited to call:
    its next delivery meets the pause (left for `unpause`) or the cancel (a `cancelled`
    line) as any queued job does. A late copy of a compacted campaign's job is dropped."""
    await asyncio.to_thread(give_back, client, job)
    if steered.late:
        log.info("job %s: late-copy (%s); dropped without its call", job.job_id, steered)
        await rounds.run(LET_GO, (holders_key(),), (job.job_id, message))
        return "late-copy"
    log.info("job %s: %s; back to its queue", job.job_id, steered)
    await asyncio.to_thread(queue.send, [job])
    # after the new message went out: never unheld
    await rounds.run(LET_GO, (holders_key(),), (job.job_id, message))
    return "stepped aside"


async def skipped(
    rounds: RoundTrips, client: redis.Redis, job: Job, worker: str, outcome: str, message: str
) -> None:
    """A job not run: a campaign cancelled for good gets its `cancelled` line (once, however
    many deliveries meet it); else the worker only stops holding its message."""
    if outcome == "cancelled" and await asyncio.to_thread(cancel_ends, client, job.campaign_id):
        why = "the campaign was cancelled before this job started"
        since = await asyncio.to_thread(now_seconds, client)
        line = never_started(job, worker, Status.CANCELLED, why, since)
        await publish(rounds, line, job.target.queue, message_id=message)
    else:
        await rounds.run(LET_GO, (holders_key(),), (job.job_id, message))


async def wait_for_capacity(
    rounds: RoundTrips,
    client: redis.Redis,
    queue: JobQueue,
    job: Job,
    worker: str,
    busy: NoCapacity,
    message: str,
) -> str:
    """Back to the queue for a few seconds, as often as it takes, until the job's deadline.

    Waiting is not a failure: the job is sent again as a new message, held like any other
    (`bridge.delivery.holders`), so a worker that dies while holding it loses nothing.
    """
    # Redis's clock: another worker, on another host, may have found it busy before.
    now = await asyncio.to_thread(now_seconds, client)
    since = job.waiting_since or now
    if now - since >= job.timeout_seconds:
        why = f"nothing free to run it for {job.timeout_seconds:.0f} s: {busy}"
        timeout = never_started(job, worker, Status.TIMEOUT, why, since)
        await publish(rounds, timeout, job.target.queue, message_id=message, called=False)
        log.warning("job %s: %s", job.job_id, why)
        return Status.TIMEOUT.value
    log.info("job %s: %s; back to the queue for %.1f s", job.job_id, busy, busy.retry_in)
    waiting = job.model_copy(update={"waiting_since": since})
    await asyncio.to_thread(queue.send, [waiting], countdown=busy.retry_in)
    # after the new message went out: never unheld
    await rounds.run(LET_GO, (holders_key(),), (job.job_id, message))
    return "waiting"


def spend(client: redis.Redis, result: Result, published: bool, worker: str) -> None:
    """Charge the campaign's budget what a published result cost (answer and judges), if
    it has one, settling the reservation its call held; a result already published only
    gives the reservation back. A charge Redis refused is logged, the result being
    published already."""
    campaign_id, usd = result.campaign_id, result.spent_usd()
    held = holds_reservation(result.job_id)
    if not held and (usd is None or not published):
        return
    settled(result.job_id)
    try:
        if charge(client, campaign_id, usd if published else None, worker, result.job_id):
            log.warning("campaign %s: budget reached; paused", campaign_id)
    except redis.RedisError as exc:
        log.warning(
            "campaign %s: could not charge $%g to its budget: %s", campaign_id, usd or 0, exc
        )

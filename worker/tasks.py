"""`run_case`: run one job under a lease, publish its result once, whatever happens."""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any

import redis
from celery import Celery, Task

from evalrelay.bridge.clock import now_seconds
from evalrelay.bridge.contract.campaign_state import cancel_ends
from evalrelay.bridge.contract.job import Job
from evalrelay.bridge.contract.names import RUN_CASE
from evalrelay.bridge.delivery.holders import let_go
from evalrelay.bridge.delivery.holds import take_hold
from evalrelay.bridge.delivery.lease import Lease
from evalrelay.bridge.delivery.payloads import job_of
from evalrelay.bridge.delivery.publish import PUBLISHED, publish
from evalrelay.bridge.queue.budget import charge
from evalrelay.bridge.queue.celery_queue import JobQueue
from evalrelay.bridge.results.result import Result, Status
from evalrelay.worker.execute import execute, never_started
from evalrelay.worker.providers.admission import give_back, holds_reservation, settled
from evalrelay.worker.providers.base import NoCapacity, Steered
from evalrelay.worker.stopping import hand_back, released, stopping

log = logging.getLogger(__name__)


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


def register_tasks(app: Celery, client: Callable[[], redis.Redis]) -> None:
    @app.task(name=RUN_CASE, **JOB_TASK)
    def run_case(self: Task, payload: dict[str, Any]) -> str:
        worker = self.request.hostname or "worker"
        message: str = self.request.id
        job = job_of(client(), payload)
        if job is None:
            log.warning("job %s: no longer stored; this delivery is ignored", payload["job_id"])
            let_go(client(), str(payload["job_id"]), message)
            return "no longer stored"
        if stopping.is_set():  # reached a pool thread after the worker began to stop
            if message in released:
                return "handed back"  # its message is on its queue again
            return hand_back(client(), JobQueue(app, client()), [job], message)
        # On any other exception (Redis gone at publish time) the worker keeps holding the
        # job on record: when this process ends, the reaper sends it again.
        try:
            return run_job(client(), job, worker, message)
        except NoCapacity as busy:
            return wait_for_capacity(client(), JobQueue(app, client()), job, worker, busy, message)
        except Steered as steered:
            return step_aside(client(), JobQueue(app, client()), job, steered, message)


def step_aside(
    client: redis.Redis, queue: JobQueue, job: Job, steered: Steered, message: str
) -> str:
    """Back to the queue, unstarted, after its campaign was steered while it waited to call:
    its next delivery meets the pause (left for `unpause`) or the cancel (a `cancelled`
    line) as any queued job does. A late copy of a compacted campaign's job is dropped."""
    give_back(client, job)
    if steered.late:
        log.info("job %s: late-copy (%s); dropped without its call", job.job_id, steered)
        let_go(client, job.job_id, message)
        return "late-copy"
    log.info("job %s: %s; back to its queue", job.job_id, steered)
    queue.send([job])
    let_go(client, job.job_id, message)  # after the new message went out: never unheld
    return "stepped aside"


def skipped(client: redis.Redis, job: Job, worker: str, outcome: str, message: str) -> None:
    """A job not run: a campaign cancelled for good gets its `cancelled` line (once, however
    many deliveries meet it); else the worker only stops holding its message."""
    if outcome == "cancelled" and cancel_ends(client, job.campaign_id):
        why = "the campaign was cancelled before this job started"
        line = never_started(job, worker, Status.CANCELLED, why, now_seconds(client))
        publish(client, line, job.target.queue, message_id=message)
    elif message:
        let_go(client, job.job_id, message)


def wait_for_capacity(
    client: redis.Redis, queue: JobQueue, job: Job, worker: str, busy: NoCapacity, message: str
) -> str:
    """Back to the queue for a few seconds, as often as it takes, until the job's deadline.

    Waiting is not a failure: the job is sent again as a new message, held like any other
    (`bridge.delivery.holders`), so a worker that dies while holding it loses nothing.
    """
    now = now_seconds(client)  # another worker, on another host, may have found it busy before
    since = job.waiting_since or now
    if now - since >= job.timeout_seconds:
        why = f"nothing free to run it for {job.timeout_seconds:.0f} s: {busy}"
        timeout = never_started(job, worker, Status.TIMEOUT, why, since)
        publish(client, timeout, job.target.queue, message_id=message, called=False)
        log.warning("job %s: %s", job.job_id, why)
        return Status.TIMEOUT.value
    log.info("job %s: %s; back to the queue for %.1f s", job.job_id, busy, busy.retry_in)
    queue.send([job.model_copy(update={"waiting_since": since})], countdown=busy.retry_in)
    let_go(client, job.job_id, message)  # after the new message went out: never unheld
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


def run_job(client: redis.Redis, job: Job, worker: str, message: str = "") -> str:
    """Run the job unless it is cancelled, paused, done, or running elsewhere; say which. The worker
    no longer holds `message` when this returns, unless it raised `NoCapacity`."""
    noted = take_hold(job.job_id, message) if message else None
    try:
        outcome, lease = Lease.begin(
            client,
            job.job_id,
            worker,
            campaign_id=job.campaign_id,
            attempt=job.attempt,
            holder=noted[1] if noted else "",
            queue=job.target.queue,
        )
    except BaseException:
        if noted:
            noted[0].put_back(job.job_id, noted[1])  # still held: written later
        raise
    if lease is None:
        log.info("job %s: %s; this delivery is ignored", job.job_id, outcome)
        skipped(client, job, worker, outcome, message)
        return outcome
    try:
        with lease.heartbeat():  # also while publishing waits for Redis
            result = execute(job, worker, client)
            published = publish(client, result, job.target.queue, lease.token, message)
    except BaseException:
        lease.release()
        raise
    spend(
        client, result, published == PUBLISHED, worker
    )  # the answer and its judges, in one charge
    log.info("job %s: %s (%s)", job.job_id, result.status.value, published)
    return result.status.value

"""`run_case`: run one job under a lease, publish its result once, whatever happens."""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any

import redis
from celery import Celery, Task

from bridge.queue.celery_queue import RUN_CASE
from bridge.queue.jobs import Job
from worker.execute import execute
from worker.lease import Lease
from worker.providers.base import NoCapacity
from worker.publish import publish

log = logging.getLogger(__name__)


def register_tasks(app: Celery, client: Callable[[], redis.Redis]) -> None:
    @app.task(
        name=RUN_CASE,
        bind=True,
        shared=False,
        lazy=False,
        acks_late=True,
        reject_on_worker_lost=True,
        ignore_result=True,
    )
    def run_case(self: Task, payload: dict[str, Any]) -> str:
        job = Job.model_validate(payload)
        try:
            return run_job(client(), job, self.request.hostname or "worker")
        except NoCapacity as busy:
            log.info("job %s: %s; back to the queue for %.1f s", job.job_id, busy, busy.retry_in)
            raise self.retry(countdown=busy.retry_in, max_retries=None) from None


def run_job(client: redis.Redis, job: Job, worker: str) -> str:
    """Run the job unless it is cancelled, done, or running elsewhere; say which."""
    outcome, lease = Lease.begin(
        client, job.job_id, worker, campaign_id=job.campaign_id, attempt=job.attempt
    )
    if lease is None:
        log.info("job %s: %s; this delivery is ignored", job.job_id, outcome)
        return outcome
    try:
        with lease.heartbeat():
            result = execute(job, worker, client)
        published = publish(client, result, lease.token)
    except BaseException:
        lease.release()
        raise
    log.info(
        "job %s: %s (%s)",
        job.job_id,
        result.status.value,
        "published" if published else "already published",
    )
    return result.status.value

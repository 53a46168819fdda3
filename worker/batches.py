"""`run_batch`: the API jobs of one message, run together on this process's event loop.

A message carries several jobs of one target (`bridge.queue.celery_queue`), so Celery's
per-message work is paid once for them all, and their calls run on one asyncio loop per
process with the vendors' async clients: no thread per call. Every guarantee is kept per
job, by the one job run both tasks use (`worker.job_run.run_job`): its own lease, taken
when it starts (a job waiting for a slot is not running), its result published once, its
hold on the message let go with it. A worker killed mid-batch loses nothing: the jobs it
has not published are held in its name, and the reaper sends them again when its `alive`
key runs out; the ones published stay done.
"""

from __future__ import annotations

import logging
from collections import Counter
from collections.abc import Callable

import redis
from celery import Celery, Task

from evalrelay.bridge.contract.job import Job
from evalrelay.bridge.contract.names import RUN_BATCH
from evalrelay.bridge.delivery.holders import let_go
from evalrelay.bridge.delivery.payloads import batch_payloads, jobs_of
from evalrelay.bridge.queue.celery_queue import JobQueue
from evalrelay.worker.heap import settle_once
from evalrelay.worker.job_run import JOB_TASK
from evalrelay.worker.loop import worker_loop
from evalrelay.worker.stopping import hand_back, released, stopping

log = logging.getLogger(__name__)

HANDED_BACK = "handed back"


def register_batch_task(app: Celery, client: Callable[[], redis.Redis]) -> None:
    @app.task(name=RUN_BATCH, **JOB_TASK)
    def run_batch(self: Task, argument: str) -> str:
        message: str = self.request.id
        if stopping.is_set() and message in released:
            return HANDED_BACK  # its message is on its queue again
        payloads = batch_payloads(argument)
        jobs = []
        for payload, job in zip(payloads, jobs_of(client(), payloads), strict=True):
            if job is None:  # its campaign is complete and compacted: a late duplicate
                log.warning("job %s: no longer stored; this delivery is ignored", payload["job_id"])
                let_go(client(), str(payload["job_id"]), message)
            else:
                jobs.append(job)
        if not jobs:
            return "no longer stored"
        worker = self.request.hostname or "worker"
        queue = JobQueue(app, client())
        if stopping.is_set():  # reached a pool thread after the worker began to stop
            return hand_back(client(), queue, jobs, message)
        return run_jobs(client(), queue, jobs, worker, message)


def run_jobs(
    client: redis.Redis, queue: JobQueue, jobs: list[Job], worker: str, message: str
) -> str:
    """Run the batch's jobs on the loop and wait for them all (the jobs not started when
    the worker began to stop go back to their queue). Says how many ended how."""
    loop = worker_loop()
    outcomes = loop.run(loop.run_batch(client, queue, jobs, worker, message))
    settle_once()
    failed = [outcome for outcome in outcomes if isinstance(outcome, BaseException)]
    for job, outcome in zip(jobs, outcomes, strict=True):
        if isinstance(outcome, BaseException):
            log.error("job %s: not published (%s); sent again when this worker stops",
                      job.job_id, outcome)  # fmt: skip
    if failed:
        raise failed[0]
    counts = Counter(str(outcome) for outcome in outcomes)
    return ", ".join(f"{outcome}: {count}" for outcome, count in sorted(counts.items()))

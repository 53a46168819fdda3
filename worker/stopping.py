"""A worker asked to stop (SIGTERM, Ctrl-C) hands back at once the jobs it has not started.

Celery's warm shutdown lets the running jobs finish, but the messages the worker took and
has not started stay with it until it exits: the ones waiting in its timer for their
countdown (a job waiting for capacity, `worker.job_run.wait_for_capacity`) and the ones
queued in its thread pool behind the running jobs. With a grace of minutes, they would
wait minutes; here they go back to the queue as the shutdown begins, for other workers.

- A job in the timer, or in the pool waiting for a thread: its timer entry is cancelled
  and its message put back on its queue (kombu's reject with requeue: the same message,
  with the same countdown), after this worker's record of holding it is dropped; when a
  thread reaches it, `run_case` leaves it alone (`released`).
- Any other job that reaches a pool thread after the stop began is not started:
  `run_case` sends it again as a new message (`hand_back`), like a job waiting for
  capacity.

A worker SIGKILLed after its grace hands back nothing: its leases and `alive` key run out
and the reaper sends its jobs again, as for any dead worker.
"""

from __future__ import annotations

import logging
import threading
from typing import Any

import redis
from celery.worker import state

from evalrelay.bridge.contract.job import Job
from evalrelay.bridge.contract.names import RUN_BATCH, RUN_CASE
from evalrelay.bridge.delivery.holders import let_go
from evalrelay.bridge.delivery.holds import take_hold
from evalrelay.bridge.delivery.payloads import message_job_ids
from evalrelay.bridge.queue.celery_queue import JobQueue

log = logging.getLogger(__name__)

stopping = threading.Event()
"""Set in this process when its worker begins a warm shutdown."""

released: set[str] = set()
"""The messages put back on their queues as the worker began to stop, by message id."""


def hand_back(client: redis.Redis, queue: JobQueue, jobs: list[Job], message: str) -> str:
    """Send jobs this worker will not start back to their queue, as new messages, then
    drop the old message's holds (after: a job is never unheld while it is on its way)."""
    for job in jobs:
        take_hold(job.job_id, message)  # a note not yet written is dropped
    queue.send(jobs)
    for job in jobs:
        let_go(client, job.job_id, message)
        log.info("job %s: the worker is stopping; back to the queue for another", job.job_id)
    return "handed back"


def waiting_requests(threads: bool) -> list[Any]:
    """This worker's job messages not started: in its timer (a countdown), or, for a
    threads pool, handed to it and waiting for a thread (a countdown ended while every
    thread was busy). A prefork pool's child would still run those, knowing nothing of
    the stop: they stay, and run within the grace."""
    waiting = [*state.scheduled_requests]
    if threads:
        waiting += set(state.reserved_requests) - set(state.active_requests)
    return [r for r in waiting if r.name in (RUN_CASE, RUN_BATCH) and not r.acknowledged]


def requeue_waiting(client: redis.Redis, threads: bool) -> int:
    """Put the messages of the jobs this worker has not started back on their queues."""
    count = 0
    for request in waiting_requests(threads):
        entry = getattr(request, "_eta_timer_entry", None)
        if entry is not None:
            entry.cancel()
        job_ids = message_job_ids(request.name, request.args)
        if not job_ids:
            continue
        released.add(request.id)  # before: a thread that reaches it now leaves it alone
        try:
            for job_id in job_ids:
                take_hold(job_id, request.id)  # a note not yet written is dropped too
                let_go(client, job_id, request.id)
            request.message.reject(requeue=True)
        except Exception as exc:  # kept, then sent again when this worker's `alive` key goes
            released.discard(request.id)
            log.warning("jobs %s: could not hand them back on stopping: %s", job_ids, exc)
            continue
        request.acknowledged = True  # so Celery does not acknowledge it again
        state.scheduled_requests.discard(request)
        count += 1
    return count


def on_shutting_down(client: redis.Redis | None, worker: str, how: str, threads: bool) -> None:
    """The worker begins to stop: no job starts here from now on; on a warm shutdown, the
    jobs not started go back at once. Runs in Celery's signal handler: it never raises."""
    stopping.set()
    if how != "Warm" or client is None:
        return
    try:
        count = requeue_waiting(client, threads)
    except Exception as exc:
        log.warning("worker %s stopping: could not hand back its waiting jobs: %s", worker, exc)
        return
    if count:
        log.info("worker %s stopping: %d waiting jobs back to the queue", worker, count)

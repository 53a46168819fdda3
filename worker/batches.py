"""`run_batch`: the API jobs of one message, run together on this process's event loop.

A message carries several jobs of one target (`bridge.queue.celery_queue`), so Celery's
per-message work is paid once for them all, and their calls run on one asyncio loop per
process with the vendors' async clients: no thread per call. Every guarantee is kept per
job, as `worker.tasks.run_job` keeps it for a job alone: its own lease, taken when it
starts (a job waiting for a slot is not running), its result published once, its hold on
the message let go with it. A worker killed mid-batch loses nothing: the jobs it has not
published are held in its name, and the reaper sends them again when its `alive` key
runs out; the ones published stay done.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import threading
from collections import Counter
from collections.abc import AsyncIterator, Callable, Coroutine
from typing import Any, TypeVar

import redis
from celery import Celery, Task

from evalrelay.bridge.contract.job import Job
from evalrelay.bridge.contract.names import RUN_BATCH
from evalrelay.bridge.delivery.holders import let_go
from evalrelay.bridge.delivery.holds import take_hold
from evalrelay.bridge.delivery.lease import LeaseBegin
from evalrelay.bridge.delivery.payloads import jobs_of
from evalrelay.bridge.delivery.publish import PUBLISHED, Publication, outcome_of
from evalrelay.bridge.delivery.round_trips import RoundTrips
from evalrelay.bridge.keys import holders_key
from evalrelay.bridge.lua_scripts import BEGIN_LEASE, LET_GO, PUBLISH
from evalrelay.bridge.queue.celery_queue import JobQueue
from evalrelay.bridge.results.result import Result
from evalrelay.worker.execute import execute_async
from evalrelay.worker.heap import settle_once
from evalrelay.worker.providers.admission import holds_reservation
from evalrelay.worker.providers.base import NoCapacity, Steered
from evalrelay.worker.stopping import hand_back, released, stopping
from evalrelay.worker.tasks import JOB_TASK, skipped, spend, step_aside, wait_for_capacity

log = logging.getLogger(__name__)

T = TypeVar("T")

HANDED_BACK = "handed back"

job_slots: dict[str, int] = {}
"""Jobs at once on each worker's loop, by worker name: a threads pool's size. A prefork
child, which runs one message at a time, runs its batch's jobs all at once."""

STOP_LOOK_SECONDS = 0.2
"""How often the loop looks whether the worker began to stop, while jobs wait for a slot."""


def register_batch_task(app: Celery, client: Callable[[], redis.Redis]) -> None:
    @app.task(name=RUN_BATCH, **JOB_TASK)
    def run_batch(self: Task, payloads: list[dict[str, Any]], job_ids: list[str]) -> str:
        message: str = self.request.id
        if stopping.is_set() and message in released:
            return HANDED_BACK  # its message is on its queue again
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


class WorkerLoop:
    """This process's event loop, on a thread of its own, and what its jobs share there."""

    def __init__(self) -> None:
        self.loop = asyncio.new_event_loop()
        self._slots: dict[str, asyncio.Semaphore] = {}
        self._round_trips: dict[int, RoundTrips] = {}
        self._waiting: set[asyncio.Future[Any]] = set()
        self._watcher: asyncio.Task[None] | None = None
        threading.Thread(target=self.loop.run_forever, daemon=True, name="evalrelay-loop").start()

    def run(self, coroutine: Coroutine[Any, Any, T]) -> T:
        """Run on the loop, from another thread, and wait for the outcome."""
        return asyncio.run_coroutine_threadsafe(coroutine, self.loop).result()

    async def run_batch(
        self, client: redis.Redis, queue: JobQueue, jobs: list[Job], worker: str, message: str
    ) -> list[str | BaseException]:
        rounds = self._round_trips.setdefault(id(client), RoundTrips(client))
        slots = self._slots_of(worker)
        return await asyncio.gather(
            *(self._run_one(rounds, slots, client, queue, job, worker, message) for job in jobs),
            return_exceptions=True,
        )

    def _slots_of(self, worker: str) -> asyncio.Semaphore | None:
        if worker not in job_slots:
            return None
        if worker not in self._slots:
            self._slots[worker] = asyncio.Semaphore(job_slots[worker])
        return self._slots[worker]

    async def _run_one(
        self,
        rounds: RoundTrips,
        slots: asyncio.Semaphore | None,
        client: redis.Redis,
        queue: JobQueue,
        job: Job,
        worker: str,
        message: str,
    ) -> str:
        async with self._slot(slots) as started:
            if not started:  # back at once, not when the batch's running jobs end
                return await asyncio.to_thread(hand_back, client, queue, [job], message)
            return await run_job(rounds, client, queue, job, worker, message)

    @contextlib.asynccontextmanager
    async def _slot(self, slots: asyncio.Semaphore | None) -> AsyncIterator[bool]:
        """A slot to run a job in (True), or False when the worker began to stop first: the
        jobs still waiting then are woken (`_watch_for_stop`), not left to wait their turn."""
        if stopping.is_set():
            yield False
            return
        if slots is None:
            yield True
            return
        if slots.locked():
            self._watch_for_stop()
            taking = asyncio.ensure_future(slots.acquire())
            self._waiting.add(taking)
            try:
                await taking
            except asyncio.CancelledError:
                if not stopping.is_set():
                    raise
                yield False
                return
            finally:
                self._waiting.discard(taking)
        else:
            await slots.acquire()
        try:
            yield True
        finally:
            slots.release()

    def _watch_for_stop(self) -> None:
        if self._watcher is None:
            self._watcher = self.loop.create_task(self._wake_waiting_on_stop())

    async def _wake_waiting_on_stop(self) -> None:
        """One look at the stop for all the waiting jobs (each looking cost more than the
        calls themselves with thousands waiting)."""
        while not stopping.is_set():
            await asyncio.sleep(STOP_LOOK_SECONDS)
        for taking in list(self._waiting):
            taking.cancel()
        self._watcher = None


async def run_job(
    rounds: RoundTrips, client: redis.Redis, queue: JobQueue, job: Job, worker: str, message: str
) -> str:
    """`worker.tasks.run_job` on the loop: unless cancelled, paused, done or running
    elsewhere, run the job under its lease and publish its result once."""
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
        if outcome == "cancelled":  # rare: a campaign cancelled for good gets its line
            await asyncio.to_thread(skipped, client, job, worker, outcome, message)
        else:
            await rounds.run(LET_GO, (holders_key(),), (job.job_id, message))
        return outcome
    try:
        with lease.heartbeat():  # also while publishing waits for Redis
            result = await execute_async(job, worker, client)
            published = await publish(rounds, result, job.target.queue, lease.token, message)
    except NoCapacity as busy:
        await asyncio.to_thread(lease.release)
        return await asyncio.to_thread(wait_for_capacity, client, queue, job, worker, busy, message)
    except Steered as steered:
        await asyncio.to_thread(lease.release)
        return await asyncio.to_thread(step_aside, client, queue, job, steered, message)
    except BaseException:
        with contextlib.suppress(redis.RedisError):
            await asyncio.to_thread(lease.release)
        raise
    if result.spent_usd() is not None or holds_reservation(job.job_id):
        # the answer and its judges, in one charge
        await asyncio.to_thread(spend, client, result, published == PUBLISHED, worker)
    log.info("job %s: %s (%s)", job.job_id, result.status.value, published)
    return result.status.value


async def publish(
    rounds: RoundTrips, result: Result, queue: str, lease_token: str, message_id: str
) -> str:
    """`bridge.delivery.publish.publish` through the loop's round trips, tried again as long while
    Redis is out of reach."""
    call = Publication.of(result, queue, lease_token, message_id)
    return outcome_of(await rounds.run_through_outage(PUBLISH, call.keys, call.args, call.waiting))


_loops: dict[int, WorkerLoop] = {}
_loops_lock = threading.Lock()


def worker_loop() -> WorkerLoop:
    """This process's loop (a forked child starts its own: threads do not survive a fork)."""
    pid = os.getpid()
    with _loops_lock:
        if pid not in _loops:
            _loops.clear()
            _loops[pid] = WorkerLoop()
        return _loops[pid]

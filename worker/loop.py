"""This process's event loop, on a thread of its own, where every job runs
(`worker.job_run`): a batch's API jobs together, each agent job from its task's thread.
"""

from __future__ import annotations

import asyncio
import contextlib
import threading
from collections.abc import AsyncIterator, Coroutine
from concurrent.futures import ThreadPoolExecutor
from typing import Any, TypeVar

import redis

from evalrelay.bridge.contract.job import Job
from evalrelay.bridge.delivery.round_trips import RoundTrips
from evalrelay.bridge.per_process import PerProcess
from evalrelay.bridge.queue.celery_queue import JobQueue
from evalrelay.worker.job_run import execute_on_thread, run_job
from evalrelay.worker.stopping import hand_back, stopping

T = TypeVar("T")

BLOCKING_THREADS = 512
"""The most calls that block at once on a process's loop (threads start as they are
needed): above any worker's `--concurrency`, so a job never waits for a thread."""

job_slots: dict[str, int] = {}
"""Jobs at once on each worker's loop, by worker name: a threads pool's size. A prefork
child, which runs one message at a time, runs its batch's jobs all at once."""

STOP_LOOK_SECONDS = 0.2
"""How often the loop looks whether the worker began to stop, while jobs wait for a slot."""


class WorkerLoop:
    """This process's event loop, on a thread of its own, and what its jobs share there."""

    def __init__(self) -> None:
        self.loop = asyncio.new_event_loop()
        self._slots: dict[str, asyncio.Semaphore] = {}
        self._round_trips: dict[int, RoundTrips] = {}
        self._waiting: set[asyncio.Future[Any]] = set()
        self._watcher: asyncio.Task[None] | None = None
        # Calls that block (agents, trials, conversations, judges) run on this pool: as
        # many at once as the worker's jobs, not asyncio's default of a few.
        self.loop.set_default_executor(
            ThreadPoolExecutor(max_workers=BLOCKING_THREADS, thread_name_prefix="evalrelay-job")
        )
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

    def run_one(
        self, client: redis.Redis, queue: JobQueue, job: Job, worker: str, message: str
    ) -> str:
        """An agent's job (or a trial), from the task's own thread: run on the loop as a
        batch's job is, its execution on a thread of the loop's pool; waits for it."""
        rounds = self._round_trips.setdefault(id(client), RoundTrips(client))
        return self.run(
            run_job(rounds, client, queue, job, worker, message, execute=execute_on_thread)
        )

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


worker_loop = PerProcess(WorkerLoop)
"""This process's loop, on a thread of its own (a forked child starts its own)."""

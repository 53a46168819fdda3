"""A job's own calls admitted, each right before it starts, by its campaign's steering and
budget (`bridge.queue.admission`): after the target's slot, rate limit or retry back-off
was waited for, so a pause, cancel or spent budget that came meanwhile starts no call.

The jobs of this process that hold a budget reservation are remembered here, so the
result's charge (or the job's stepping aside) settles it.
"""

from __future__ import annotations

import asyncio
import socket
import threading
import time
from collections.abc import Iterator

import redis

from evalrelay.bridge.contract.job import Job
from evalrelay.bridge.queue.admission import Admitted, admit, release
from evalrelay.bridge.queue.estimate import estimate
from evalrelay.worker.providers.base import Steered
from evalrelay.worker.providers.limits import within

WAIT_SECONDS = 0.05
"""How often a call held back by the calls under way asks again."""

_held: set[str] = set()
_held_lock = threading.Lock()


def holds_reservation(job_id: str) -> bool:
    with _held_lock:
        return job_id in _held


def settled(job_id: str) -> None:
    """The job's reservation was settled by its charge."""
    with _held_lock:
        _held.discard(job_id)


def give_back(client: redis.Redis, job: Job) -> None:
    """Release the job's reservation, when it holds one: its call failed, or the job left."""
    with _held_lock:
        if job.job_id not in _held:
            return
        _held.discard(job.job_id)
    release(client, job.campaign_id, job.job_id)


class Admission:
    """The admission of one job's calls."""

    def __init__(self, client: redis.Redis, job: Job) -> None:
        self.client, self.job = client, job
        self.by = f"a worker on {socket.gethostname()}"

    def admit(self, deadline: float) -> None:
        for seconds in self._waits(deadline):
            time.sleep(seconds)

    async def aadmit(self, deadline: float) -> None:
        for seconds in self._waits(deadline):
            await asyncio.sleep(seconds)

    def failed(self) -> None:
        """The admitted call failed: its reservation goes back to the budget."""
        give_back(self.client, self.job)

    def _waits(self, deadline: float) -> Iterator[float]:
        """Raises `Steered` when the call must not start; yields each wait for the calls
        under way to be charged."""
        job, made = self.job, None
        while True:
            found = admit(self.client, job.campaign_id, job.job_id, self.by, made)
            if found is Admitted.ESTIMATE:
                made = next(iter(estimate([job]).values())).usd
            elif found is Admitted.WAIT:
                yield within(deadline, WAIT_SECONDS, "budget the calls under way hold")
            elif found.stops:
                raise Steered(found.value if found is not Admitted.BUDGET else "budget reached")
            else:
                if found is Admitted.RESERVED:
                    with _held_lock:
                        _held.add(job.job_id)
                return

"""One rate limit for all workers: per target, requests and tokens per minute and a cap on
calls at once, kept in Redis so every worker process on every machine shares it.

Requests and tokens per minute are token buckets refilled continuously; the concurrency
cap is a semaphore whose slots are leases, so a worker that dies frees its slot when the
lease runs out.
"""

from __future__ import annotations

import asyncio
import time
import uuid
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager, contextmanager

import redis

from evalrelay.bridge.keys import PREFIX
from evalrelay.bridge.lua_scripts import TAKE_SLOT, TAKE_TOKENS
from evalrelay.bridge.results.result import Status
from evalrelay.worker.providers.base import ProviderFailure

SLOT_LEASE_SECONDS = 600.0
"""A concurrency slot outlives a crashed holder by at most this long."""


def _bucket_key(target: str, kind: str) -> str:
    return f"{PREFIX}:limit:{target}:{kind}"


class RateGate:
    """A target's limits for one call. `call` waits on a thread, `acall` on an event loop;
    both follow the same `_waits`, so they take and release alike.

    Its Redis scripts stay synchronous in `acall` too: each is one sub-millisecond round
    trip, taken only for targets with limits, and a second (asyncio) connection pool per
    loop would cost more CPU per call than the round trip blocks the loop."""

    def __init__(
        self,
        client: redis.Redis,
        target: str,
        *,
        rpm: int | None = None,
        tpm: int | None = None,
        max_concurrency: int | None = None,
    ) -> None:
        self.client, self.target = client, target
        self.rpm, self.tpm, self.max_concurrency = rpm, tpm, max_concurrency

    @contextmanager
    def call(self, deadline: float, tokens: int = 0) -> Iterator[None]:
        """Wait for a request slot (and tokens) within the deadline, hold it for the call."""
        slot = uuid.uuid4().hex
        try:
            for seconds in self._waits(deadline, tokens, slot):
                time.sleep(seconds)
            yield
        finally:
            self._release(slot)

    @asynccontextmanager
    async def acall(self, deadline: float, tokens: int = 0) -> AsyncIterator[None]:
        """`call` on an event loop: its waits let the loop's other calls run."""
        slot = uuid.uuid4().hex
        try:
            for seconds in self._waits(deadline, tokens, slot):
                await asyncio.sleep(seconds)
            yield
        finally:
            self._release(slot)

    def _waits(self, deadline: float, tokens: int, slot: str) -> Iterator[float]:
        """Takes the slot, then the request and the tokens; yields each wait in between.
        Raises `timeout` when a wait would end past the deadline."""
        if self.max_concurrency:
            while not self._take_slot(slot, self.max_concurrency):
                yield within(deadline, 0.05, f"max_concurrency of target {self.target}")
        if self.rpm:
            while wait := self._take(deadline, "rpm", self.rpm, 1):
                yield wait
        if self.tpm and tokens:
            while wait := self._take(deadline, "tpm", self.tpm, min(tokens, self.tpm)):
                yield wait

    def _take(self, deadline: float, kind: str, per_minute: int, cost: int) -> float:
        """0 when the tokens are taken, else the seconds until there will be enough."""
        # A burst of one request: limits hold over any window, not only per minute.
        burst = 1 if kind == "rpm" else per_minute
        wait_ms = int(
            self.client.eval(
                TAKE_TOKENS, 1, _bucket_key(self.target, kind), per_minute / 60, burst, cost
            )
        )
        if wait_ms == 0:
            return 0.0
        return within(deadline, wait_ms / 1000, f"{kind} limit of target {self.target}")

    def _take_slot(self, slot: str, cap: int) -> bool:
        return bool(
            self.client.eval(
                TAKE_SLOT,
                1,
                _bucket_key(self.target, "slots"),
                cap,
                int(SLOT_LEASE_SECONDS * 1000),
                slot,
            )
        )

    def _release(self, slot: str) -> None:
        """Frees the slot; a slot never taken (a wait that timed out) is not in the set."""
        if self.max_concurrency:
            self.client.zrem(_bucket_key(self.target, "slots"), slot)


def within(deadline: float, seconds: float, what: str) -> float:
    """`seconds`, when waiting that long still ends before the deadline."""
    if time.monotonic() + seconds >= deadline:
        raise ProviderFailure(Status.TIMEOUT, f"the job's time ran out waiting for the {what}")
    return seconds

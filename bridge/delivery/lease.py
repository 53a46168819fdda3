"""The lease a worker holds on a job while it runs it, renewed by a heartbeat thread.

A second delivery of the same job finds the lease and leaves. A worker that dies stops
renewing; the lease runs out and the reaper (`bridge.delivery.reaper`) sends the job again, long
before the broker's visibility timeout would.
"""

from __future__ import annotations

import logging
import os
import threading
import time
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass

import redis

from evalrelay.bridge.connection import through_outage
from evalrelay.bridge.keys import (
    cancel_key,
    compacted_key,
    done_key,
    holders_key,
    inflight_key,
    lease_key,
    outstanding_key,
    paused_key,
)
from evalrelay.bridge.lua_scripts import BEGIN_LEASE, RELEASE_LEASE, RENEW_LEASE
from evalrelay.bridge.per_process import PerProcess

log = logging.getLogger(__name__)

LEASE_SECONDS = float(os.environ.get("EVALRELAY_LEASE_SECONDS", "30"))
"""How long a lease outlives its last heartbeat; heartbeats come three times as often."""


@dataclass(frozen=True)
class LeaseBegin:
    """The keys and arguments of one `BEGIN_LEASE`, to run alone (`Lease.begin`) or in a pipeline
    with other jobs' (`bridge.delivery.round_trips`)."""

    job_id: str
    token: str
    seconds: float
    keys: tuple[str, ...]
    args: tuple[str | int, ...]

    @classmethod
    def of(
        cls,
        job_id: str,
        owner: str,
        campaign_id: str = "",
        attempt: int = 1,
        seconds: float = LEASE_SECONDS,
        holder: str = "",
        queue: str = "",
    ) -> LeaseBegin:
        token = f"{owner}:{uuid.uuid4().hex}"
        keys = (
            cancel_key(campaign_id),
            done_key(campaign_id, job_id),
            lease_key(job_id),
            inflight_key(),
            holders_key(),
            paused_key(campaign_id),
            outstanding_key(queue) if queue else "",
            compacted_key(campaign_id),
        )
        return cls(
            job_id, token, seconds, keys, (attempt, token, int(seconds * 1000), job_id, holder)
        )

    def lease(self, client: redis.Redis, outcome: str) -> Lease | None:
        return Lease(client, self.job_id, self.token, self.seconds) if outcome == "leased" else None

    def waiting(self, error: Exception) -> None:
        log.warning("job %s: Redis out of reach to take its lease (%s); retrying",
                    self.job_id, error)  # fmt: skip


class Lease:
    def __init__(self, client: redis.Redis, job_id: str, token: str, seconds: float) -> None:
        self.client = client
        self.job_id = job_id
        self.token = token
        self.seconds = seconds
        self.lost = threading.Event()

    @classmethod
    def acquire(
        cls, client: redis.Redis, job_id: str, owner: str, seconds: float = LEASE_SECONDS
    ) -> Lease | None:
        """The lease, or None when another live worker holds it."""
        return cls.begin(client, job_id, owner, seconds=seconds)[1]

    @classmethod
    def begin(
        cls,
        client: redis.Redis,
        job_id: str,
        owner: str,
        *,
        campaign_id: str = "",
        attempt: int = 1,
        seconds: float = LEASE_SECONDS,
        holder: str = "",
        queue: str = "",
    ) -> tuple[str, Lease | None]:
        """(`leased`, the lease), or (`late-copy` | `cancelled` | `paused` | `duplicate` |
        `running-elsewhere`, None). `queue` is the one the job was sent to.

        `holder` is the record that this worker holds the job's message (`bridge.delivery.holds`),
        written with the lease; a job that does not run needs none.
        """
        begin = LeaseBegin.of(job_id, owner, campaign_id, attempt, seconds, holder, queue)
        outcome = str(
            through_outage(
                lambda: client.eval(BEGIN_LEASE, len(begin.keys), *begin.keys, *begin.args),
                begin.waiting,
            )
        )
        return outcome, begin.lease(client, outcome)

    def renew(self) -> bool:
        renewed = self.client.eval(
            RENEW_LEASE,
            2,
            lease_key(self.job_id),
            inflight_key(),
            self.token,
            int(self.seconds * 1000),
            self.job_id,
        )
        return bool(renewed)

    def release(self) -> None:
        self.client.eval(
            RELEASE_LEASE, 2, lease_key(self.job_id), inflight_key(), self.token, self.job_id
        )

    @contextmanager
    def heartbeat(self) -> Iterator[Lease]:
        with keep_renewed(self.renew, self.seconds / 3, f"job {self.job_id}", self.lost):
            yield self


@contextmanager
def keep_renewed(
    renew: Callable[[], bool], every: float, what: str, lost: threading.Event
) -> Iterator[None]:
    """Call `renew` every `every` seconds while the block runs.

    `renew` returning False means the lease went to someone else: `lost` is set and the
    renewing stops. A Redis error is logged and tried again on the next beat. One thread
    per process renews every lease held in it (`Renewals`): a thread per job cost as much
    as the rest of a quick job's bookkeeping.
    """
    renewal = _Renewal(renew, every, what, lost, time.monotonic() + every)
    renewals().add(renewal)
    try:
        yield
    finally:
        renewals().remove(renewal)


@dataclass(eq=False)
class _Renewal:
    renew: Callable[[], bool]
    every: float
    what: str
    lost: threading.Event
    due: float
    ended: bool = False


class Renewals:
    """The renewals of one process, made by one daemon thread, each when it falls due."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._held: set[_Renewal] = set()
        self._changed = threading.Event()
        self._thread: threading.Thread | None = None
        self._wakes_at: float | None = None

    def add(self, renewal: _Renewal) -> None:
        with self._lock:
            self._held.add(renewal)
            if self._thread is None:
                self._thread = threading.Thread(target=self._run, daemon=True, name="leases")
                self._thread.start()
            # Most renewals fall due after the ones already held: no need to wake the thread.
            early = self._wakes_at is None or renewal.due < self._wakes_at
        if early:
            self._changed.set()

    def remove(self, renewal: _Renewal) -> None:
        with self._lock:
            renewal.ended = True  # a renewal under way now is not taken for a lost lease
            self._held.discard(renewal)

    def _run(self) -> None:
        while True:
            with self._lock:
                self._changed.clear()  # an `add` from here on wakes the wait below
                due = [r for r in self._held if r.due <= time.monotonic()]
                wakes_at = self._wakes_at = min((r.due for r in self._held), default=None)
            for renewal in due:
                self._renew(renewal)
            if not due:
                self._changed.wait(None if wakes_at is None else wakes_at - time.monotonic())

    def _renew(self, renewal: _Renewal) -> None:
        renewal.due = time.monotonic() + renewal.every
        try:
            renewed = renewal.renew()
        except redis.RedisError as exc:
            log.warning("%s: lease heartbeat failed: %s", renewal.what, exc)
            return
        if not renewed and not renewal.ended:
            log.warning("%s: lease lost; another worker may take it", renewal.what)
            renewal.lost.set()
            self.remove(renewal)


renewals = PerProcess(Renewals)
"""This process's renewals (a forked child starts its own)."""

"""The lease a worker holds on a job while it runs it, renewed by a heartbeat thread.

A second delivery of the same job finds the lease and leaves. A worker that dies stops
renewing; the lease runs out and the reaper (`bridge.queue.reaper`) sends the job again, long
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

import redis

from bridge.keys import cancel_key, done_key, inflight_key, lease_key

log = logging.getLogger(__name__)

LEASE_SECONDS = float(os.environ.get("EVALRELAY_LEASE_SECONDS", "30"))
"""How long a lease outlives its last heartbeat; heartbeats come three times as often."""

_BEGIN = """
if redis.call('EXISTS', KEYS[1]) == 1 then return 'cancelled' end
if tonumber(redis.call('GET', KEYS[2]) or '0') >= tonumber(ARGV[1]) then return 'duplicate' end
if not redis.call('SET', KEYS[3], ARGV[2], 'NX', 'PX', ARGV[3]) then return 'running-elsewhere' end
redis.call('ZADD', KEYS[4], ARGV[4], ARGV[5])
return 'leased'
"""
"""One round trip: skip a cancelled, finished or running job, else take its lease."""

_RENEW = """
if redis.call('GET', KEYS[1]) == ARGV[1] then
  redis.call('PEXPIRE', KEYS[1], ARGV[2])
  redis.call('ZADD', KEYS[2], ARGV[3], ARGV[4])
  return 1
end
return 0
"""

_RELEASE = """
if redis.call('GET', KEYS[1]) == ARGV[1] then
  redis.call('DEL', KEYS[1])
  redis.call('ZREM', KEYS[2], ARGV[2])
  return 1
end
return 0
"""


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
    ) -> tuple[str, Lease | None]:
        """(`leased`, the lease), or (`cancelled` | `duplicate` | `running-elsewhere`, None)."""
        token = f"{owner}:{uuid.uuid4().hex}"
        keys = (cancel_key(campaign_id), done_key(job_id), lease_key(job_id), inflight_key())
        outcome = str(
            client.eval(
                _BEGIN,
                len(keys),
                *keys,
                attempt,
                token,
                int(seconds * 1000),
                _expiry_ms(seconds),
                job_id,
            )
        )
        return outcome, (cls(client, job_id, token, seconds) if outcome == "leased" else None)

    def renew(self) -> bool:
        renewed = self.client.eval(
            _RENEW,
            2,
            lease_key(self.job_id),
            inflight_key(),
            self.token,
            int(self.seconds * 1000),
            _expiry_ms(self.seconds),
            self.job_id,
        )
        return bool(renewed)

    def release(self) -> None:
        self.client.eval(
            _RELEASE, 2, lease_key(self.job_id), inflight_key(), self.token, self.job_id
        )

    @contextmanager
    def heartbeat(self) -> Iterator[Lease]:
        with keep_renewed(self.renew, self.seconds / 3, f"job {self.job_id}", self.lost):
            yield self


@contextmanager
def keep_renewed(
    renew: Callable[[], bool], every: float, what: str, lost: threading.Event
) -> Iterator[None]:
    """Call `renew` every `every` seconds in a thread while the block runs.

    `renew` returning False means the lease went to someone else: `lost` is set and the
    renewing stops. A Redis error is logged and tried again on the next beat.
    """
    stop = threading.Event()

    def beat() -> None:
        while not stop.wait(every):
            try:
                if not renew():
                    log.warning("%s: lease lost; another worker may take it", what)
                    lost.set()
                    return
            except redis.RedisError as exc:
                log.warning("%s: lease heartbeat failed: %s", what, exc)

    thread = threading.Thread(target=beat, daemon=True, name=f"lease {what}")
    thread.start()
    try:
        yield
    finally:
        stop.set()
        thread.join()


def _expiry_ms(seconds: float) -> int:
    return int((time.time() + seconds) * 1000)

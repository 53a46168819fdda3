"""A target's rate limits changed while campaigns run, shared by every worker through Redis.

`evalrelay limit` writes them; each worker process reads them at most once a second per
target (`REFRESH_SECONDS`), so a change takes effect within a second everywhere, without a
restart and without a round trip per call. The buckets and slots themselves stay where
they are (`worker.providers.limits`): a new rate refills the same bucket.
"""

from __future__ import annotations

import threading
import time
from typing import cast

import redis
from pydantic import BaseModel, ConfigDict, PositiveInt

from evalrelay.bridge.keys import limits_audit_key, live_limits_key

REFRESH_SECONDS = 1.0
"""How stale a worker's copy of a target's live limits may be."""

AUDIT_LENGTH = 1000


class LiveLimits(BaseModel):
    """Limits set live; a field left None keeps the targets file's."""

    model_config = ConfigDict(extra="forbid")

    rpm: PositiveInt | None = None
    tpm: PositiveInt | None = None
    max_concurrency: PositiveInt | None = None


def set_limits(client: redis.Redis, target: str, limits: LiveLimits, by: str) -> None:
    """Merge `limits` into the target's live limits, with a line in the audit."""
    fields = {k: str(v) for k, v in limits.model_dump(exclude_none=True).items()}
    pipe = client.pipeline(transaction=True)
    if fields:
        pipe.hset(live_limits_key(target), mapping=fields)  # type: ignore[arg-type]
    _audit(pipe, target, by, " ".join(f"{k}={v}" for k, v in fields.items()))
    pipe.execute()


def clear_limits(client: redis.Redis, target: str, by: str) -> None:
    """Back to the targets file's limits."""
    pipe = client.pipeline(transaction=True)
    pipe.delete(live_limits_key(target))
    _audit(pipe, target, by, "cleared: the targets file's limits")
    pipe.execute()


def _audit(pipe: redis.client.Pipeline, target: str, by: str, change: str) -> None:
    entry = {"target": target, "at": str(time.time()), "by": by, "change": change}
    pipe.xadd(limits_audit_key(), entry, maxlen=AUDIT_LENGTH, approximate=True)  # type: ignore[arg-type]


def read_limits(client: redis.Redis, target: str) -> LiveLimits:
    raw = cast(dict[str, str], client.hgetall(live_limits_key(target)))
    return LiveLimits.model_validate({k: int(v) for k, v in raw.items()})


def limit_changes(client: redis.Redis, last: int = 10) -> list[dict[str, str]]:
    """The last changes of any target's limits, oldest first."""
    entries = cast(
        list[tuple[str, dict[str, str]]], client.xrevrange(limits_audit_key(), count=last)
    )
    return [fields for _, fields in reversed(entries)]


class LimitsCache:
    """A process's copy of the targets' live limits, each read again after `REFRESH_SECONDS`."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._held: dict[str, tuple[float, LiveLimits]] = {}

    def get(self, client: redis.Redis, target: str) -> LiveLimits:
        now = time.monotonic()
        with self._lock:
            held = self._held.get(target)
        if held is not None and now - held[0] < REFRESH_SECONDS:
            return held[1]
        limits = read_limits(client, target)
        with self._lock:
            self._held[target] = (now, limits)
        return limits


LIVE = LimitsCache()
"""The one cache of this process."""

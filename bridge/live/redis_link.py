"""Redis as the server asks it: quickly, or not at all.

The commands' client (`bridge.connection.client_for`) rides out an outage by retrying
for seconds, which is right for a collector and wrong for a page polled every 2 s: here a
question Redis cannot answer at once gets None, the page says Redis is out of reach, and
Redis is not asked again for a moment, so a partition does not hold every request.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from typing import TypeVar

import redis
from redis.backoff import NoBackoff
from redis.retry import Retry

from evalrelay.bridge.live.feed import RedisState

T = TypeVar("T")

PAUSE_SECONDS = 2.0
"""After Redis failed to answer, how long every question gets None without asking."""


class RedisLink:
    def __init__(self, url: str) -> None:
        self.client = redis.Redis.from_url(
            url,
            decode_responses=True,
            socket_connect_timeout=2,
            socket_timeout=5,
            # One more try on a fresh connection: a restarted Redis leaves the pooled ones dead.
            retry=Retry(NoBackoff(), 1),
            retry_on_error=[redis.ConnectionError],
        )
        self._lock = threading.Lock()
        self._failed_at: float | None = None
        self._error: str | None = None

    def ask(self, question: Callable[[redis.Redis], T]) -> T | None:
        """`question`'s answer, or None when Redis is out of reach (then `state` says why)."""
        with self._lock:
            if self._failed_at is not None and time.monotonic() - self._failed_at < PAUSE_SECONDS:
                return None
        try:
            answer = question(self.client)
        except (redis.ConnectionError, redis.TimeoutError, OSError) as exc:
            with self._lock:
                self._failed_at, self._error = time.monotonic(), f"{type(exc).__name__}: {exc}"
            return None
        with self._lock:
            self._failed_at = self._error = None
        return answer

    def state(self) -> RedisState:
        with self._lock:
            if self._error is None:
                return RedisState(reachable=True)
            return RedisState(reachable=False, message=self._error)

    def close(self) -> None:
        self.client.close()

"""Retrying vendor calls: after the vendor's own wait, else exponential backoff with jitter.

Retries are bounded three ways: by count, by total time (and the job's deadline), and by
how often the same error may repeat. Every call is recorded for the result.
"""

from __future__ import annotations

import random
import time
from collections.abc import Callable
from typing import Any, TypeVar

from pydantic import BaseModel

from worker.providers.base import ProviderFailure

T = TypeVar("T")


class RetryPolicy(BaseModel):
    max_retries: int = 3
    initial_delay: float = 1.0
    max_delay: float = 60.0
    """The longest backoff of our own; a vendor's `Retry-After` is followed as given."""
    max_seconds: float = 300.0
    same_error_cap: int = 3
    """Stop once the same status has come back this many times in a row."""


def with_retries(
    call: Callable[[float], T],
    classify: Callable[[BaseException], ProviderFailure],
    deadline: float,
    policy: RetryPolicy,
    sleep: Callable[[float], None] = time.sleep,
) -> tuple[T, list[dict[str, Any]]]:
    """`call(timeout)` until it succeeds or a bound is reached; the output and every call."""
    started = time.monotonic()
    calls: list[dict[str, Any]] = []
    streak = 0
    for attempt in range(1, policy.max_retries + 2):
        began = time.monotonic()
        remaining = deadline - began
        try:
            output = call(remaining)
        except Exception as exc:
            failure = classify(exc)
            streak = streak + 1 if calls and calls[-1]["status"] == failure.status.value else 1
            calls.append(
                {
                    "attempt": attempt,
                    "status": failure.status.value,
                    "message": failure.message,
                    "duration_ms": _ms(began),
                    "retry_after": failure.retry_after,
                }
            )
            wait = _wait(failure, attempt, policy)
            out_of_time = time.monotonic() + wait >= min(deadline, started + policy.max_seconds)
            if (
                not failure.retryable
                or attempt > policy.max_retries
                or out_of_time
                or streak >= policy.same_error_cap
            ):
                failure.calls = calls
                raise failure from None
            sleep(wait)
            continue
        calls.append({"attempt": attempt, "status": "ok", "duration_ms": _ms(began)})
        return output, calls
    raise AssertionError("unreachable")


def _wait(failure: ProviderFailure, attempt: int, policy: RetryPolicy) -> float:
    if failure.retry_after is not None:
        # The vendor said when; sooner only earns another refusal. A wait past the job's
        # deadline or `max_seconds` ends the retries instead.
        return failure.retry_after
    backoff = min(policy.max_delay, policy.initial_delay * 2.0 ** (attempt - 1))
    return float(backoff * random.uniform(0.5, 1.0))


def _ms(began: float) -> int:
    return int((time.monotonic() - began) * 1000)

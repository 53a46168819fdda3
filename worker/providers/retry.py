"""Retrying vendor calls: after the vendor's own wait, else exponential backoff with jitter.

Retries are bounded three ways: by count, by total time (and the job's deadline), and by
how often the same error may repeat. Every call is recorded for the result.

One `Retrying` holds the policy's state and decisions; `with_retries` (threads) and
`awith_retries` (an event loop) only make the calls and wait, so the two cannot drift apart.
"""

from __future__ import annotations

import asyncio
import random
import time
from collections.abc import Awaitable, Callable
from typing import Any, TypeVar

from pydantic import BaseModel

from evalrelay.worker.providers.base import ProviderFailure, Steered

T = TypeVar("T")

Classify = Callable[[BaseException], ProviderFailure]


class RetryPolicy(BaseModel):
    max_retries: int = 3
    initial_delay: float = 1.0
    max_delay: float = 60.0
    """The longest backoff of our own; a vendor's `Retry-After` is followed as given."""
    max_seconds: float = 300.0
    same_error_cap: int = 3
    """Stop once the same status has come back this many times in a row."""


class Retrying:
    """One job's calls under a policy: when each began, how it ended, and what comes next."""

    def __init__(self, classify: Classify, deadline: float, policy: RetryPolicy) -> None:
        self.classify, self.deadline, self.policy = classify, deadline, policy
        self.started = time.monotonic()
        self.calls: list[dict[str, Any]] = []
        self.attempt = 0
        self._streak = 0
        self._began = self.started

    def begin(self) -> float:
        """A call starts: the seconds left before the job's deadline."""
        self.attempt += 1
        self._began = time.monotonic()
        return self.deadline - self._began

    def succeeded(self) -> list[dict[str, Any]]:
        self.calls.append({"attempt": self.attempt, "status": "ok", "duration_ms": self._ms()})
        return self.calls

    def failed(self, exc: BaseException) -> float:
        """The seconds to wait before the next call; raises the failure when there is none."""
        failure = self.classify(exc)
        same = self.calls and self.calls[-1]["status"] == failure.status.value
        self._streak = self._streak + 1 if same else 1
        self.calls.append(
            {
                "attempt": self.attempt,
                "status": failure.status.value,
                "message": failure.message,
                "duration_ms": self._ms(),
                "retry_after": failure.retry_after,
            }
        )
        policy = self.policy
        wait = _wait(failure, self.attempt, policy)
        out_of_time = time.monotonic() + wait >= min(
            self.deadline, self.started + policy.max_seconds
        )
        if (
            not failure.retryable
            or self.attempt > policy.max_retries
            or out_of_time
            or self._streak >= policy.same_error_cap
        ):
            failure.calls = self.calls
            raise failure from None
        return wait

    def _ms(self) -> int:
        return int((time.monotonic() - self._began) * 1000)


def with_retries(
    call: Callable[[float], T],
    classify: Classify,
    deadline: float,
    policy: RetryPolicy,
    sleep: Callable[[float], None] = time.sleep,
) -> tuple[T, list[dict[str, Any]]]:
    """`call(timeout)` until it succeeds or a bound is reached; the output and every call."""
    retrying = Retrying(classify, deadline, policy)
    while True:
        remaining = retrying.begin()
        try:
            output = call(remaining)
        except Steered:
            raise  # not a failure of the call: it never started
        except Exception as exc:
            sleep(retrying.failed(exc))
            continue
        return output, retrying.succeeded()


async def awith_retries(
    call: Callable[[float], Awaitable[T]],
    classify: Classify,
    deadline: float,
    policy: RetryPolicy,
    sleep: Callable[[float], Awaitable[None]] = asyncio.sleep,
) -> tuple[T, list[dict[str, Any]]]:
    """`with_retries` on an event loop: the waits let the loop's other calls run."""
    retrying = Retrying(classify, deadline, policy)
    while True:
        remaining = retrying.begin()
        try:
            output = await call(remaining)
        except Steered:
            raise  # not a failure of the call: it never started
        except Exception as exc:
            await sleep(retrying.failed(exc))
            continue
        return output, retrying.succeeded()


def _wait(failure: ProviderFailure, attempt: int, policy: RetryPolicy) -> float:
    if failure.retry_after is not None:
        # The vendor said when; sooner only earns another refusal. A wait past the job's
        # deadline or `max_seconds` ends the retries instead.
        return failure.retry_after
    backoff = min(policy.max_delay, policy.initial_delay * 2.0 ** (attempt - 1))
    return float(backoff * random.uniform(0.5, 1.0))

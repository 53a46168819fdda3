"""Retries: a vendor's `Retry-After` is followed as given, within the job's bounds."""

from __future__ import annotations

import asyncio
import time

import pytest

from evalrelay.bridge.results.result import Status
from evalrelay.worker.providers.base import ProviderFailure
from evalrelay.worker.providers.retry import RetryPolicy, awith_retries, with_retries


def limited(retry_after: float) -> ProviderFailure:
    return ProviderFailure(Status.RATE_LIMITED, "slow down", retry_after, retryable=True)


def test_a_long_retry_after_is_waited_in_full_not_cut_to_the_backoff_cap() -> None:
    answers = iter([limited(120.0), "answer"])
    waited: list[float] = []

    def call(_: float) -> str:
        answer = next(answers)
        if isinstance(answer, ProviderFailure):
            raise answer
        return answer

    output, calls = with_retries(
        call, lambda exc: exc, time.monotonic() + 600, RetryPolicy(), sleep=waited.append
    )  # type: ignore[arg-type,return-value]
    assert (output, waited) == ("answer", [120.0])
    assert [c["status"] for c in calls] == ["rate_limited", "ok"]


def test_a_retry_after_past_the_deadline_ends_the_retries_at_once() -> None:
    waited: list[float] = []

    def call(_: float) -> str:
        raise limited(120.0)

    with pytest.raises(ProviderFailure) as failed:
        with_retries(
            call, lambda exc: exc, time.monotonic() + 60, RetryPolicy(), sleep=waited.append
        )  # type: ignore[arg-type]
    assert failed.value.status is Status.RATE_LIMITED
    assert waited == []


def test_on_an_event_loop_the_same_policy_decides_the_same_calls() -> None:
    """`awith_retries` against `with_retries` over one script of failures: the same waits,
    the same record of calls, the same end."""
    script = [
        limited(0.5),
        ProviderFailure(Status.INFRA_ERROR, "boom", 0.25, retryable=True),
        "answer",
    ]

    def by_thread() -> tuple[object, list[float], list[str]]:
        answers, waited = iter(script), []

        def call(_: float) -> str:
            answer = next(answers)
            if isinstance(answer, ProviderFailure):
                raise answer
            return answer

        output, calls = with_retries(
            call, lambda exc: exc, time.monotonic() + 600, RetryPolicy(), sleep=waited.append
        )  # type: ignore[arg-type]
        return output, waited, [c["status"] for c in calls]

    def on_a_loop() -> tuple[object, list[float], list[str]]:
        answers, waited = iter(script), []

        async def call(_: float) -> str:
            answer = next(answers)
            if isinstance(answer, ProviderFailure):
                raise answer
            return answer

        async def wait(seconds: float) -> None:
            waited.append(seconds)

        output, calls = asyncio.run(
            awith_retries(call, lambda exc: exc, time.monotonic() + 600, RetryPolicy(), sleep=wait)  # type: ignore[arg-type]
        )
        return output, waited, [c["status"] for c in calls]

    assert (
        on_a_loop()
        == by_thread()
        == (
            "answer",
            [0.5, 0.25],
            ["rate_limited", "infra_error", "ok"],
        )
    )


def test_on_an_event_loop_a_repeated_error_stops_at_the_cap_and_is_raised_with_its_calls() -> None:
    async def call(_: float) -> str:
        raise limited(0.0)

    with pytest.raises(ProviderFailure) as failed:
        asyncio.run(
            awith_retries(call, lambda exc: exc, time.monotonic() + 60, RetryPolicy(max_retries=9))  # type: ignore[arg-type]
        )
    assert [c["status"] for c in failed.value.calls] == ["rate_limited"] * 3

"""Retries: a vendor's `Retry-After` is followed as given, within the job's bounds."""

from __future__ import annotations

import time

import pytest

from bridge.results.result import Status
from worker.providers.base import ProviderFailure
from worker.providers.retry import RetryPolicy, with_retries


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

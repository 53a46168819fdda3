"""What became of a result, in the words a report uses: passed, failed (the model's
doing), error (not the model's), ungraded or cancelled."""

from __future__ import annotations

from enum import StrEnum

from evalrelay.bridge.reports.lines import ResultHead
from evalrelay.bridge.results.result import Result, Status


class Outcome(StrEnum):
    PASSED = "passed"
    FAILED = "failed"
    """The model's answer fell short: a low score or a model failure."""
    ERROR = "error"
    """Not the model's doing: infrastructure, limits, timeouts, grading."""
    UNGRADED = "ungraded"
    CANCELLED = "cancelled"


def outcome(result: Result | ResultHead) -> Outcome:
    if result.status is Status.CANCELLED:
        return Outcome.CANCELLED
    if not result.status.is_scored:
        return Outcome.ERROR
    if result.passed is None:
        return Outcome.FAILED if result.status is Status.MODEL_FAILURE else Outcome.UNGRADED
    return Outcome.PASSED if result.passed else Outcome.FAILED


def is_cached(result: Result) -> bool:
    """The answer came from the response cache (`run --cache`), not from a call of its own:
    its `usage`, `request_id`, `latency_ms` and `calls` are those of the call that filled it."""
    return result.artifacts.get("cached") is True

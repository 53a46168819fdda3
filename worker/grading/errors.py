"""How grading fails: never as a silent zero, always as a failure the result names."""

from __future__ import annotations

from typing import Any


class GradingError(Exception):
    """An evaluator could not judge the answer (a judge's malformed reply, a script's crash).

    The job's result becomes an `infra_error` of kind `grading_error`; the answer, the other
    evaluators' verdicts and this one's `details` (a judge's replies) are kept.
    """

    def __init__(self, message: str, details: dict[str, Any] | None = None) -> None:
        super().__init__(message)
        self.details = details or {}


def refuse_unknown_judge(unknown: dict[str, str], target: str | None, name: str) -> None:
    """An evaluator whose judge (or embedding) target the campaign's targets file lacks
    (`Job.unknown_judges`) cannot grade: its job ends as an infra error saying which target
    to define, rather than as a verdict."""
    if target is not None and target in unknown:
        raise GradingError(
            f"evaluator {name}: judge {unknown[target]}; define it, or name a target that exists"
        )

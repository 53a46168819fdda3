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

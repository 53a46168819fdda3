"""How grading fails: never as a silent zero, always as a failure the result names."""

from __future__ import annotations


class GradingError(Exception):
    """An evaluator could not judge the answer (a judge's malformed reply, a script's crash).

    The job's result becomes an `infra_error` of kind `grading_error`; the answer is kept.
    """

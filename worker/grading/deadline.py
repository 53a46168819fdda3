"""How long grading may take: as long as the call may (the job's `timeout_seconds`),
counted from when the answer arrived.

Without a bound one evaluator could hold a worker for hours (a regular expression that
backtracks, a script that never ends, a judge that never answers) while its lease is
renewed and the campaign waits; with one, it ends as a `grading_error` that says why.
"""

from __future__ import annotations

import time
from typing import NamedTuple

from evalrelay.worker.grading.errors import GradingError


class Deadline(NamedTuple):
    at: float
    """`time.monotonic()` past which no evaluator starts or goes on."""
    seconds: float
    """The whole allowance, named in messages."""

    @classmethod
    def after(cls, seconds: float) -> Deadline:
        return cls(time.monotonic() + seconds, seconds)

    def left(self, evaluator: str) -> float:
        """Seconds left for `evaluator`; a GradingError when none are."""
        remaining = self.at - time.monotonic()
        if remaining <= 0:
            raise GradingError(self.overrun(evaluator))
        return remaining

    def within(self, seconds: float, evaluator: str) -> float:
        """`seconds`, or less when the deadline comes first."""
        return min(seconds, self.left(evaluator))

    def overrun(self, evaluator: str) -> str:
        return (
            f"evaluator {evaluator}: grading ran past its time limit ({self.seconds:g} s, the "
            "job's timeout_seconds, counted from the answer)"
        )

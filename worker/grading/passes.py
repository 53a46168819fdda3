"""Whether evaluators pass, and a case with them, by promptfoo's rules.

promptfoo grades a test as a set of assertions: each passes or fails by its own rule (a
check when it holds, a script by what it returned, a grader by its `pass`), and the test
passes when every one passes. A `threshold` on the test (or on an `assert-set`) replaces
that with the weighted mean of the scores reaching it; an assertion's weight counts only
in that mean. The scores are weighted means as evalrelay's, except that weights adding
up to 0 give 0, as promptfoo has it.
"""

from __future__ import annotations

from collections.abc import Sequence

from evalrelay.bridge.results.result import EvaluatorResult


def own_pass(result: EvaluatorResult) -> bool:
    """The evaluator's pass: the one it reported, else a full score (evalrelay's checks
    and run limits score 1 or 0). An assertion of weight 0 passes, as promptfoo counts
    it (an assertion set's own weight aside)."""
    if result.weight == 0 and result.type != "composite":
        return True
    if result.passed is not None:
        return result.passed
    return result.score is not None and result.score >= 1.0


def weighted_score(results: Sequence[EvaluatorResult]) -> float:
    total = sum(r.weight for r in results)
    return sum((r.score or 0.0) * r.weight for r in results) / total if total else 0.0


def set_passes(results: Sequence[EvaluatorResult], score: float, threshold: float | None) -> bool:
    """A test's (or an assertion set's) pass: its score at its threshold when it has
    one, else every member's own pass."""
    if threshold is not None:
        return score >= threshold
    return all(own_pass(r) for r in results)

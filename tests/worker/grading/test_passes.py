"""promptfoo's grading rules (promptfoo 0.121's AssertionsResult and runAssertion): a
test passes when every assertion passes, or at its threshold; a weight of 0 counts in
neither the score nor the pass; weights adding up to 0 score 0."""

from __future__ import annotations

from evalrelay.bridge.results.result import EvaluatorResult
from evalrelay.worker.grading.grade import combine_as_promptfoo, grade
from evalrelay.worker.grading.passes import own_pass, set_passes
from tests.conftest import direct_job


def result(score: float | None, weight: float = 1.0, passed: bool | None = None,
           type_: str = "contains") -> EvaluatorResult:  # fmt: skip
    return EvaluatorResult(name="e", type=type_, score=score, weight=weight, passed=passed)


def test_any_failing_assertion_fails_the_test_whatever_the_weights() -> None:
    grade = combine_as_promptfoo([result(1.0, 9), result(0.0, 1)], threshold=None)
    assert (grade.score, grade.passed) == (0.9, False)


def test_a_threshold_replaces_the_assertions_passes_with_the_score() -> None:
    assert combine_as_promptfoo([result(1.0, 9), result(0.0, 1)], 0.85).passed is True
    assert combine_as_promptfoo([result(1.0, 9), result(0.0, 1)], 0.95).passed is False
    assert combine_as_promptfoo([result(0.0)], 0.0).passed is True  # 0 is a threshold too


def test_an_evaluators_own_pass_wins_over_its_score() -> None:
    assert own_pass(result(0.6, passed=True)) is True  # a grader passing a 0.6
    assert own_pass(result(0.9, passed=False)) is False
    assert own_pass(result(1.0)) is True and own_pass(result(0.5)) is False
    grade = combine_as_promptfoo([result(0.3, passed=True), result(1.0)], None)
    assert (grade.score, grade.passed) == (0.65, True)


def test_weight_zero_passes_but_an_assertion_set_keeps_its_verdict() -> None:
    assert own_pass(result(0.0, weight=0)) is True
    assert own_pass(result(0.0, weight=0, passed=False, type_="composite")) is False
    grade = combine_as_promptfoo([result(1.0), result(0.0, weight=0)], None)
    assert (grade.score, grade.passed) == (1.0, True)
    assert combine_as_promptfoo([result(1.0, 0), result(0.0, 0)], None).score == 0.0


def test_an_assertion_set_passes_at_its_threshold_or_when_each_member_does() -> None:
    members = [result(1.0), result(0.0)]
    assert set_passes(members, 0.5, 0.5) is True
    assert set_passes(members, 0.5, None) is False
    assert set_passes([result(1.0), result(0.2, passed=True)], 0.6, None) is True


def test_a_failed_evaluator_leaves_no_score_and_no_pass() -> None:
    grade = combine_as_promptfoo([result(1.0), EvaluatorResult(name="x", type="llm_judge",
                                 score=None, error="judge down")], None)  # fmt: skip
    assert (grade.score, grade.passed, grade.failures) == (None, None, ["judge down"])


def test_a_test_without_assertions_passes_with_score_one() -> None:
    graded = grade(direct_job(grading="promptfoo", pass_threshold=None), "anything")
    assert graded is not None and (graded.score, graded.passed) == (1.0, True)
    assert grade(direct_job(), "anything") is None  # evalrelay's own: nothing to grade

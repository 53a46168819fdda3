"""Combining evaluators: weights, names, the pass threshold, and no evaluator at all."""

from __future__ import annotations

import pytest
from pydantic import TypeAdapter

from evalrelay.bridge.contract.job import Job
from evalrelay.bridge.evalfile.evaluators import (
    ContainsEvaluator,
    EvaluatorSpec,
    LlmJudgeEvaluator,
    SimilarityEvaluator,
    ToolTrajectoryEvaluator,
)
from evalrelay.bridge.results.result import EvaluatorResult
from evalrelay.worker.grading.grade import combine, evaluator_names, grade, negated
from evalrelay.worker.grading.run_facts import RunFacts
from tests.conftest import direct_job


def result(name: str, score: float, weight: float = 1.0) -> EvaluatorResult:
    return EvaluatorResult(
        name=name,
        type="contains",
        score=score,
        weight=weight,
        hits=["h"] if score else [],
        misses=[] if score else ["m"],
        reasoning=f"{name} said so",
    )


def job(**update: object) -> Job:
    return direct_job(**update)


def test_weighted_mean_and_threshold() -> None:
    grade_ = combine([result("a", 1.0, weight=3), result("b", 0.0, weight=1)], threshold=0.8)
    assert grade_.score == 0.75 and grade_.passed is False
    assert grade_.hits == ["a: h"] and grade_.misses == ["b: m"]
    assert grade_.reasoning == "a: a said so | b: b said so"
    assert combine([result("a", 0.8)], threshold=0.8).passed is True  # at the threshold passes


def test_zero_weights_fall_back_to_a_plain_mean() -> None:
    assert combine([result("a", 1.0, 0), result("b", 0.5, 0)], 0.8).score == 0.75


def test_unnamed_evaluators_of_one_type_are_numbered() -> None:
    specs = [
        ContainsEvaluator(type="contains", value="a"),
        ContainsEvaluator(type="contains", value="b", name="second"),
        ContainsEvaluator(type="contains", value="c"),
        LlmJudgeEvaluator(type="llm_judge"),
    ]
    assert evaluator_names(specs) == ["contains-1", "second", "contains-2", "llm_judge"]  # type: ignore[arg-type]


def test_no_evaluator_and_no_judge_means_no_score() -> None:
    assert grade(job(), "anything") is None


def test_threshold_comes_from_the_job() -> None:
    graded = grade(
        job(evaluators=[ContainsEvaluator(type="contains", value="x")], pass_threshold=1.0), "x"
    )
    assert graded is not None and graded.passed is True and graded.score == 1.0


def test_negate_turns_a_check_around() -> None:
    spec = ContainsEvaluator(type="contains", value="sorry", negate=True)
    apologetic = grade(job(evaluators=[spec]), "I am sorry")
    plain = grade(job(evaluators=[spec]), "Here it is")
    assert apologetic is not None and apologetic.score == 0.0
    assert apologetic.misses == ["must not hold, but does: answer contains 'sorry'"]
    assert plain is not None and plain.score == 1.0
    assert plain.hits == ["not so, as required: answer contains 'sorry'"]


def test_a_required_evaluator_below_the_threshold_makes_the_score_zero() -> None:
    specs = [
        ContainsEvaluator(type="contains", value="a", required=True),
        ContainsEvaluator(type="contains", value="b"),
    ]
    graded = grade(job(evaluators=specs, pass_threshold=0.5), "b only")
    assert graded is not None and (graded.score, graded.passed) == (0.0, False)
    assert graded.misses[0] == "required evaluator contains-1 scored 0 < 0.5"
    optional = grade(job(evaluators=[specs[0].model_copy(update={"required": False}), specs[1]],
                         pass_threshold=0.5), "b only")  # fmt: skip
    assert optional is not None and (optional.score, optional.passed) == (0.5, True)


def test_a_required_evaluators_min_score_replaces_the_threshold() -> None:
    specs = [ContainsEvaluator(type="contains", value="a", required=True, min_score=0.4)]
    above = combine([result("contains", 0.5)], threshold=0.8, specs=specs)  # type: ignore[arg-type]
    assert above.score == 0.5 and not any("required" in m for m in above.misses)
    below = combine([result("contains", 0.3)], threshold=0.2, specs=specs)  # type: ignore[arg-type]
    assert (below.score, below.passed) == (0.0, False)
    assert below.misses[0] == "required evaluator contains scored 0.3 < 0.4"


def test_a_required_evaluator_at_its_minimum_is_met() -> None:
    specs = [ContainsEvaluator(type="contains", value="a", required=True, min_score=0.5)]
    at = combine([result("contains", 0.5)], threshold=0.5, specs=specs)  # type: ignore[arg-type]
    assert (at.score, at.passed) == (0.5, True)
    assert not any("required" in m for m in at.misses)


def test_a_required_evaluator_that_failed_leaves_no_score_and_no_verdict() -> None:
    """It could not judge: neither met nor unmet, and the grade has no score."""
    specs = [ContainsEvaluator(type="contains", value="a", required=True)]
    failed = EvaluatorResult(name="contains", type="contains", score=None, weight=1.0, error="x")
    graded = combine([failed], threshold=0.8, specs=specs)  # type: ignore[arg-type]
    assert (graded.score, graded.passed, graded.failures) == (None, None, ["x"])
    assert graded.misses == []


def test_an_unmet_required_rubric_item_fails_a_case_that_scores_above_the_threshold() -> None:
    judged = result("rubric", 0.9).model_copy(update={"details": {"required_unmet": ["cites"]}})
    specs: list[EvaluatorSpec] = [LlmJudgeEvaluator(type="llm_judge")]
    graded = combine([judged], threshold=0.5, specs=specs)
    assert (graded.score, graded.passed) == (0.9, False)  # the score stays, the case fails
    assert graded.misses[0] == "required rubric item cites of rubric not met"
    met = combine([result("rubric", 0.9)], threshold=0.5, specs=specs)
    assert met.passed is True


def test_a_failing_negated_evaluator_is_a_failure_not_an_exception() -> None:
    spec = SimilarityEvaluator(type="similarity", negate=True)  # no reference: it fails
    graded = grade(job(evaluators=[spec, ContainsEvaluator(type="contains", value="x")]), "x")
    assert graded is not None and (graded.score, graded.passed) == (None, None)
    assert graded.failures == [
        "evaluator similarity: the case has no expected_messages to compare the answer with"
    ]
    failed = EvaluatorResult(name="n", type="similarity", score=None, weight=1.0, error="broke")
    assert negated(failed) == failed


def test_scores_keep_six_decimals() -> None:
    third = combine([result("a", 1.0), result("b", 0.0), result("c", 0.0)], threshold=0.3)
    assert third.score == 0.333333 and third.passed is True
    unweighted = combine([result("a", 1.0, 0), result("b", 0.0, 0), result("c", 0.0, 0)], 0.3)
    assert unweighted.score == 0.333333
    judged = result("j", 0.1234567)
    assert negated(judged).score == 0.876543
    assert [r.name for r in third.evaluator_results] == ["a", "b", "c"]


def test_weights_summing_to_less_than_one_still_weigh() -> None:
    assert combine([result("a", 1.0, 0.75), result("b", 0.0, 0.25)], 0.8).score == 0.75


def test_run_facts_reach_a_trajectory_evaluator_and_default_to_none_recorded() -> None:
    spec = ToolTrajectoryEvaluator(type="tool_trajectory", mode="any_order", minimums={"ls": 1})
    called = grade(job(evaluators=[spec]), "done", run=RunFacts(tool_calls=[{"name": "ls"}]))
    assert called is not None and (called.score, called.failures) == (1.0, [])
    unrecorded = grade(job(evaluators=[spec]), "done")  # no run facts: no tool called
    assert unrecorded is not None and (unrecorded.score, unrecorded.failures) == (0.0, [])


@pytest.mark.parametrize(
    ("entry", "passing", "failing"),
    [
        ({"type": "trajectory", "check": "tool-used", "value": "ls"}, [{"name": "ls"}], []),
        ({"type": "latency", "threshold": 100}, 50, 500),
    ],
)
def test_each_run_evaluator_is_graded_through_grade(
    entry: dict[str, object], passing: object, failing: object
) -> None:
    spec = TypeAdapter(EvaluatorSpec).validate_python(entry)
    facts = "tool_calls" if isinstance(passing, list) else "duration_ms"
    good = grade(job(evaluators=[spec]), "x", run=RunFacts(**{facts: passing}))
    bad = grade(job(evaluators=[spec]), "x", run=RunFacts(**{facts: failing}))
    assert good is not None and (good.score, good.failures) == (1.0, [])
    assert bad is not None and (bad.score, bad.failures) == (0.0, [])


def test_field_accuracy_is_graded_through_grade() -> None:
    spec = TypeAdapter(EvaluatorSpec).validate_python(
        {"type": "field_accuracy", "fields": [{"path": "a", "match": "exact"}]}
    )
    graded = grade(job(evaluators=[spec], reference_answer='{"a": 1}'), '{"a": 1}')
    assert graded is not None and (graded.score, graded.failures) == (1.0, [])

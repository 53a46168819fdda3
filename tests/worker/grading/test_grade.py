"""Combining evaluators: weights, names, the pass threshold, and no evaluator at all."""

from __future__ import annotations

from bridge.evalfile.evaluators import ContainsEvaluator, LlmJudgeEvaluator
from bridge.queue.jobs import Job
from bridge.results.result import EvaluatorResult
from tests.conftest import direct_job
from worker.grading.grade import combine, evaluator_names, grade


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

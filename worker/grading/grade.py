"""Grading one answer: each evaluator in turn, combined by weight, passed at the threshold.

A case that names no evaluator is graded by `llm_judge` when its target has a
`judge_target`, and not at all otherwise (score null).
"""

from __future__ import annotations

from collections import Counter

import redis
from pydantic import BaseModel, Field

from bridge.evalfile.evaluators import CodeEvaluator, EvaluatorSpec, LlmJudgeEvaluator
from bridge.queue.jobs import Job
from bridge.results.result import EvaluatorResult
from worker.grading.checks import check
from worker.grading.errors import GradingError
from worker.grading.judge import judge
from worker.grading.script import run_script


class Grade(BaseModel):
    score: float | None
    """Null when an evaluator failed: a grade that leaves one out would mislead."""
    passed: bool | None
    hits: list[str] = Field(default_factory=list)
    misses: list[str] = Field(default_factory=list)
    reasoning: str | None = None
    evaluator_results: list[EvaluatorResult]
    failures: list[str] = Field(default_factory=list)
    """Why evaluators could not judge; the result's status is then `infra_error`."""


def grade(job: Job, answer: str, client: redis.Redis | None = None) -> Grade | None:
    """The answer's grade, None when the case has nothing to grade it with."""
    specs: list[EvaluatorSpec] = list(job.evaluators)
    if not specs and job.default_judge:
        specs = [LlmJudgeEvaluator(type="llm_judge")]
    if not specs:
        return None
    results = [
        evaluate_or_fail(spec, name, job, answer, client)
        for spec, name in zip(specs, evaluator_names(specs), strict=True)
    ]
    return combine(results, job.pass_threshold)


def evaluate_or_fail(
    spec: EvaluatorSpec, name: str, job: Job, answer: str, client: redis.Redis | None
) -> EvaluatorResult:
    """The evaluator's verdict, or its failure in its place, so the others' verdicts stay."""
    try:
        result = evaluate(spec, name, job, answer, client)
    except GradingError as exc:
        return EvaluatorResult(
            name=name,
            type=spec.type,
            score=None,
            weight=spec.weight,
            error=str(exc),
            details=exc.details,
        )
    return negated(result) if spec.negate else result


def negated(result: EvaluatorResult) -> EvaluatorResult:
    """`negate: true`: what the check found is what must not be."""
    if result.score is None:
        return result
    return result.model_copy(
        update={
            "score": round(1.0 - result.score, 6),
            "hits": [f"not so, as required: {m}" for m in result.misses],
            "misses": [f"must not hold, but does: {h}" for h in result.hits],
        }
    )


def evaluate(
    spec: EvaluatorSpec, name: str, job: Job, answer: str, client: redis.Redis | None
) -> EvaluatorResult:
    if isinstance(spec, LlmJudgeEvaluator):
        return judge(spec, name, job, answer, client)
    if isinstance(spec, CodeEvaluator):
        return run_script(spec, name, job, answer)
    return check(spec, name, answer, job.reference_answer)


def combine(results: list[EvaluatorResult], threshold: float) -> Grade:
    """Weighted mean (a plain mean when every weight is 0); findings labelled by evaluator.

    When an evaluator failed there is no score, but every verdict and failure is kept.
    """
    failures = [r.error for r in results if r.error]
    scores = [(r.score, r.weight) for r in results if r.score is not None]
    score: float | None = None
    if not failures and scores:
        total = sum(weight for _, weight in scores)
        if total > 0:
            score = round(sum(s * w for s, w in scores) / total, 6)
        else:
            score = round(sum(s for s, _ in scores) / len(scores), 6)
    single = len(results) == 1
    label = (lambda r, text: text) if single else (lambda r, text: f"{r.name}: {text}")
    reasons = [label(r, r.reasoning) for r in results if r.reasoning]
    return Grade(
        score=score,
        passed=None if score is None else score >= threshold,
        failures=failures,
        hits=[label(r, h) for r in results for h in r.hits],
        misses=[label(r, m) for r in results for m in r.misses],
        reasoning=" | ".join(reasons) or None,
        evaluator_results=results,
    )


def evaluator_names(specs: list[EvaluatorSpec]) -> list[str]:
    """Each evaluator's `name`, else its type; repeated types are numbered."""
    counts = Counter(s.type for s in specs if not s.name)
    seen: Counter[str] = Counter()
    names = []
    for spec in specs:
        if spec.name:
            names.append(spec.name)
        elif counts[spec.type] > 1:
            seen[spec.type] += 1
            names.append(f"{spec.type}-{seen[spec.type]}")
        else:
            names.append(spec.type)
    return names

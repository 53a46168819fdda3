"""Grading one answer: each evaluator in turn, combined by weight, passed at the threshold.

A case that names no evaluator is graded by `llm_judge` when its target has a
`judge_target`, and not at all otherwise (score null).
"""

from __future__ import annotations

from collections import Counter

import redis
from pydantic import BaseModel, Field

from evalrelay.bridge.contract.job import Job
from evalrelay.bridge.evalfile.evaluators import (
    CodeEvaluator,
    CompositeEvaluator,
    EmbeddingSimilarEvaluator,
    EvaluatorSpec,
    FieldAccuracyEvaluator,
    LlmJudgeEvaluator,
    RegexEvaluator,
    RubricEvaluator,
    ToolTrajectoryEvaluator,
    TrajectoryAssertion,
    UnsupportedEvaluator,
    WorkspaceCommandEvaluator,
    WorkspaceFileEvaluator,
)
from evalrelay.bridge.results.result import EvaluatorResult
from evalrelay.worker.grading.checks import check
from evalrelay.worker.grading.composite import composite
from evalrelay.worker.grading.deadline import Deadline
from evalrelay.worker.grading.errors import GradingError
from evalrelay.worker.grading.fields import field_accuracy
from evalrelay.worker.grading.judge import judge
from evalrelay.worker.grading.metrics import run_metrics
from evalrelay.worker.grading.passes import set_passes, weighted_score
from evalrelay.worker.grading.run_facts import RunFacts
from evalrelay.worker.grading.script import run_script
from evalrelay.worker.grading.similar import similar
from evalrelay.worker.grading.trajectory import trajectory, trajectory_assertion
from evalrelay.worker.grading.transform import transformed
from evalrelay.worker.grading.workspace import workspace_command, workspace_file


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


WAITING_EVALUATORS = (
    RegexEvaluator,  # a pattern may backtrack until its deadline stops it
    CodeEvaluator,
    LlmJudgeEvaluator,
    RubricEvaluator,
    WorkspaceCommandEvaluator,
    WorkspaceFileEvaluator,
    CompositeEvaluator,
    EmbeddingSimilarEvaluator,
)
"""Evaluators that wait on something (a model, a process, files) or may run until their
deadline (a regex); the others compute in bounded time."""


def grades_at_once(job: Job) -> bool:
    """Whether grading this job only computes, so it may run on the worker's event loop
    without holding up the other calls there."""
    if not job.evaluators:
        return not job.default_judge
    return not any(
        isinstance(spec, WAITING_EVALUATORS) or spec.transforms for spec in job.evaluators
    )


def grade(
    job: Job,
    answer: str,
    client: redis.Redis | None = None,
    run: RunFacts | None = None,
    deadline: Deadline | None = None,
) -> Grade | None:
    """The answer's grade, None when the case has nothing to grade it with (under promptfoo
    grading, a pass with score 1, as promptfoo has it). Grading stops
    at `deadline` (default: the job's `timeout_seconds` from now)."""
    specs: list[EvaluatorSpec] = list(job.evaluators)
    if not specs and job.default_judge:
        specs = [LlmJudgeEvaluator(type="llm_judge")]
    if not specs and job.grading == "promptfoo":  # promptfoo passes a test with no assertion
        return Grade(score=1.0, passed=True, reasoning="No assertions", evaluator_results=[])
    if not specs:
        return None
    run = run or RunFacts()
    deadline = deadline or Deadline.after(job.timeout_seconds)
    results = [
        evaluate_or_fail(spec, name, job, answer, client, run, deadline)
        for spec, name in zip(specs, evaluator_names(specs), strict=True)
    ]
    if job.grading == "promptfoo":
        return combine_as_promptfoo(results, job.pass_threshold)
    return combine(results, job.pass_threshold if job.pass_threshold is not None else 1.0, specs)


def evaluate_or_fail(
    spec: EvaluatorSpec,
    name: str,
    job: Job,
    answer: str,
    client: redis.Redis | None,
    run: RunFacts,
    deadline: Deadline,
) -> EvaluatorResult:
    """The evaluator's verdict, or its failure in its place, so the others' verdicts stay."""
    try:
        deadline.left(name)  # none starts past the deadline
        if spec.transforms:
            answer = transformed(spec.transforms, name, job, answer, deadline)
        result = evaluate(spec, name, job, answer, client, run, deadline)
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
            "passed": None if result.passed is None else not result.passed,
            "hits": [f"not so, as required: {m}" for m in result.misses],
            "misses": [f"must not hold, but does: {h}" for h in result.hits],
        }
    )


def evaluate(
    spec: EvaluatorSpec,
    name: str,
    job: Job,
    answer: str,
    client: redis.Redis | None,
    run: RunFacts,
    deadline: Deadline,
) -> EvaluatorResult:
    if isinstance(spec, (LlmJudgeEvaluator, RubricEvaluator)):
        return judge(spec, name, job, answer, client, deadline)
    if isinstance(spec, CodeEvaluator):
        return run_script(spec, name, job, answer, run, deadline)
    if isinstance(spec, EmbeddingSimilarEvaluator):
        return similar(spec, name, job, answer, deadline)
    if isinstance(spec, ToolTrajectoryEvaluator):
        return trajectory(spec, name, run)
    if isinstance(spec, TrajectoryAssertion):
        return trajectory_assertion(spec, name, run)
    if isinstance(spec, WorkspaceFileEvaluator):
        return workspace_file(spec, name, run)
    if isinstance(spec, WorkspaceCommandEvaluator):
        return workspace_command(spec, name, run, deadline, job.target.settings)
    if isinstance(spec, FieldAccuracyEvaluator):
        return field_accuracy(spec, name, answer, job.reference_answer)
    if isinstance(spec, CompositeEvaluator):
        members = list(zip(spec.evaluators, evaluator_names(spec.evaluators), strict=True))
        return composite(
            spec, name, job, members,
            lambda member, member_name: evaluate_or_fail(
                member, member_name, job, answer, client, run, deadline
            ),
            client,
            deadline,
        )  # fmt: skip
    if isinstance(spec, UnsupportedEvaluator):
        raise GradingError(f"evaluator {name} ({spec.written_type}): {spec.why}")
    if spec.type in ("latency", "cost", "token_usage", "execution_metrics"):
        return run_metrics(spec, name, run)
    return check(spec, name, answer, job.reference_answer, deadline)  # type: ignore[arg-type]


def combine(
    results: list[EvaluatorResult], threshold: float, specs: list[EvaluatorSpec] | None = None
) -> Grade:
    """Weighted mean (a plain mean when every weight is 0); findings labelled by evaluator.

    When an evaluator failed there is no score, but every verdict and failure is kept. A
    `required` evaluator below its minimum makes the score 0, as AgentV does; a required
    rubric item not met fails the case and leaves the score as it is.
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
    unmet, items_unmet = _required_unmet(results, specs or [], threshold)
    if score is not None and unmet:
        score = 0.0
    single = len(results) == 1
    label = (lambda r, text: text) if single else (lambda r, text: f"{r.name}: {text}")
    reasons = [label(r, r.reasoning) for r in results if r.reasoning]
    return Grade(
        score=score,
        passed=None if score is None else score >= threshold and not items_unmet,
        failures=failures,
        hits=[label(r, h) for r in results for h in r.hits],
        misses=[*unmet, *items_unmet, *(label(r, m) for r in results for m in r.misses)],
        reasoning=" | ".join(reasons) or None,
        evaluator_results=results,
    )


def combine_as_promptfoo(results: list[EvaluatorResult], threshold: float | None) -> Grade:
    """promptfoo's verdict on a test (`worker.grading.passes`); findings and failures
    kept as `combine` keeps them."""
    grade = combine(results, 0.0)
    if grade.score is None:
        return grade
    score = round(weighted_score(results), 6)
    return grade.model_copy(
        update={"score": score, "passed": set_passes(results, score, threshold)}
    )


def _required_unmet(
    results: list[EvaluatorResult], specs: list[EvaluatorSpec], threshold: float
) -> tuple[list[str], list[str]]:
    """(required evaluators below their minimum, required rubric items not met)."""
    unmet, items = [], []
    for result, spec in zip(results, specs, strict=False):
        if result.score is None:
            continue
        floor = spec.min_score if spec.min_score is not None else threshold
        if spec.required and result.score < floor:
            unmet.append(f"required evaluator {result.name} scored {result.score:g} < {floor:g}")
        for item in result.details.get("required_unmet", []):
            items.append(f"required rubric item {item} of {result.name} not met")
    return unmet, items


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

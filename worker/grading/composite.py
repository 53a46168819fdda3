"""`composite`: member evaluators combined by an aggregator into one verdict.

`weighted_average` weighs the members (by `aggregator.weights`, else their own weight);
`threshold` scores the share of members that pass; `code_judge` hands every member's
result to a command and `llm_judge` to a judge, each replying with a verdict.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import redis

from evalrelay.bridge.contract.job import Job
from evalrelay.bridge.evalfile.evaluators import (
    CompositeEvaluator,
    EvaluatorSpec,
    LlmJudgeEvaluator,
)
from evalrelay.bridge.results.result import EvaluatorResult
from evalrelay.worker.grading.deadline import Deadline
from evalrelay.worker.grading.errors import GradingError
from evalrelay.worker.grading.judge import REPLY_FORMAT, Spent, ask
from evalrelay.worker.grading.passes import set_passes
from evalrelay.worker.grading.script import run_bounded
from evalrelay.worker.grading.verdict import Verdict, parse_verdict
from evalrelay.worker.providers.failures import tail

Evaluate = Callable[[EvaluatorSpec, str], EvaluatorResult]

AGGREGATOR_SECONDS = 60.0
DEFAULT_JUDGE_PROMPT = """\
Review the following evaluation results:
{{EVALUATOR_RESULTS_JSON}}

Decide the final score based on all evaluator results."""


def composite(
    spec: CompositeEvaluator,
    name: str,
    job: Job,
    members: list[tuple[EvaluatorSpec, str]],
    evaluate: Evaluate,
    client: redis.Redis | None,
    deadline: Deadline | None = None,
) -> EvaluatorResult:
    results = [evaluate(member, member_name) for member, member_name in members]
    failed = [r for r in results if r.error]
    if failed:
        raise GradingError(
            f"evaluator {name}: member {failed[0].name} failed: {failed[0].error}",
            {"members": [r.model_dump(mode="json") for r in results]},
        )
    aggregator = spec.aggregator
    spent = Spent()  # the members' judges and an `llm_judge` aggregator: the result's judges
    for result in results:
        spent.add_judged(result)
    hits = [f"[{r.name}] {h}" for r in results for h in r.hits]
    misses = [f"[{r.name}] {m}" for r in results for m in r.misses]
    reasoning = "; ".join(f"{r.name}: {r.reasoning}" for r in results if r.reasoning) or None
    passed: bool | None = None
    if aggregator.type == "weighted_average":
        weights = [aggregator.weights.get(r.name, r.weight) for r in results]
        total = sum(weights)
        score = sum((r.score or 0.0) * w for r, w in zip(results, weights, strict=True))
        score = score / total if total else 0.0
        if job.grading == "promptfoo":  # promptfoo's assert-set: a test of its own
            passed = set_passes(results, score, aggregator.threshold)
    elif aggregator.type == "threshold":
        member_floor = job.pass_threshold if job.pass_threshold is not None else 1.0
        passing = [r for r in results if (r.score or 0.0) >= member_floor]
        score = len(passing) / len(results)
        needed = aggregator.threshold if aggregator.threshold is not None else member_floor
        reasoning = (
            f"{len(passing)} of {len(results)} members passed "
            f"({'at or above' if score >= needed else 'below'} the {needed:g} required)"
        )
    else:
        verdict = _ask_aggregator(spec, name, job, results, client, deadline, spent)
        score, reasoning = verdict.score, verdict.reasoning or reasoning
        hits, misses = verdict.hits or hits, verdict.misses or misses
    return EvaluatorResult(
        name=name,
        type=spec.type,
        score=round(score, 6),
        weight=spec.weight,
        passed=passed,
        hits=hits,
        misses=misses,
        reasoning=reasoning,
        details={"members": [r.model_dump(mode="json") for r in results]},
        usage=spent.usage,
        cost=spent.cost,
    )


def _ask_aggregator(
    spec: CompositeEvaluator,
    name: str,
    job: Job,
    results: list[EvaluatorResult],
    client: redis.Redis | None,
    deadline: Deadline | None,
    spent: Spent,
) -> Verdict:
    """The aggregator's verdict; what an `llm_judge` aggregator's calls spent goes to `spent`."""
    by_name = {
        r.name: r.model_dump(mode="json", include={"score", "hits", "misses", "reasoning"})
        for r in results
    }
    aggregator = spec.aggregator
    if aggregator.type == "llm_judge":
        prompt = (aggregator.prompt or DEFAULT_JUDGE_PROMPT).replace(
            "{{EVALUATOR_RESULTS_JSON}}", json.dumps(by_name, indent=2, ensure_ascii=False)
        )
        judge_spec = LlmJudgeEvaluator(type="llm_judge", name=name)
        system = f"You combine evaluation results into one verdict.\n\n{REPLY_FORMAT}"
        verdict, _, asked = ask(
            judge_spec, name, job, system, prompt, parse_verdict, client, deadline
        )
        spent.add_spent(asked)
        return verdict
    assert aggregator.path is not None
    payload = json.dumps({"results": by_name}, ensure_ascii=False)
    argv = ["sh", "-lc", aggregator.path]
    cwd = Path(aggregator.cwd or ".")
    run = run_bounded(argv, cwd, AGGREGATOR_SECONDS, name, "aggregator", deadline, payload)
    if run.returncode != 0:
        raise GradingError(
            f"evaluator {name}: aggregator exited with code {run.returncode}: "
            f"{tail(run.stderr, 800)}"
        )
    try:
        return parse_verdict(run.stdout)
    except ValueError as exc:
        raise GradingError(
            f"evaluator {name}: aggregator printed no valid verdict: {exc}"
        ) from None

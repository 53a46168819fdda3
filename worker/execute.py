"""Running one job's provider call and turning whatever happens into a `Result`.

Every outcome is a result with a status: an answer, a recognised vendor failure, a
timeout, or an unexpected exception (an `infra_error`). Every text of the result is
masked of the secrets this worker holds (`bridge.masking`), the target's own included.
"""

from __future__ import annotations

import logging
import time
from datetime import UTC, datetime
from typing import Any

import redis

from bridge.masking import masked_model
from bridge.queue.jobs import Job
from bridge.results.pricing import PRICE_PROVIDERS, cost_of
from bridge.results.result import (
    Cost,
    ErrorInfo,
    EvaluatorResult,
    Result,
    Status,
    TurnResult,
    Usage,
)
from bridge.targets.settings import DEFAULT_KEY_VARIABLES, ENV_REFERENCE
from bridge.targets.targets_file import references
from worker.conversation import Conversation, Respond, converse
from worker.grading.grade import grade
from worker.grading.run_facts import RunFacts
from worker.providers.base import NoCapacity, ProviderFailure, ProviderOutput
from worker.providers.call import call_provider
from worker.recorded import recorded_output, recorded_turn

log = logging.getLogger(__name__)


def execute(job: Job, worker: str, client: redis.Redis | None = None) -> Result:
    started, clock = datetime.now(UTC), time.monotonic()
    trajectory, changes = None, None
    calls: list[dict[str, object]] = []
    kept: dict[str, Any] = {}
    turns: list[TurnResult] | None = None
    talk: Conversation | None = None
    try:
        if job.conversation is not None:
            talk = converse(job, _responder(clock + job.timeout_seconds, client), client)
            output, turns = talk.output, talk.turns
        else:
            output = _answer(job, clock + job.timeout_seconds, client)
        status, answer, error = Status.OK, output.answer, None
        trajectory, changes = output.trajectory, output.workspace_changes
        if output.model_failure:
            status = Status.MODEL_FAILURE
            error = ErrorInfo(kind=status.value, message=output.model_failure)
    except NoCapacity:
        raise  # not a result: the job goes back to its queue
    except ProviderFailure as failure:
        output, status, answer = None, failure.status, None
        error = ErrorInfo(kind=failure.kind, message=failure.message)
        trajectory, changes = failure.trajectory, failure.workspace_changes
        calls = failure.calls
        kept = failure.artifacts
        turns = failure.turns
    except Exception as exc:  # anything unrecognised is an infrastructure error, never a crash
        log.exception("job %s: provider raised", job.job_id)
        output, status, answer = None, Status.INFRA_ERROR, None
        error = ErrorInfo(kind=type(exc).__name__, message=str(exc))
    finished, duration_ms = datetime.now(UTC), int((time.monotonic() - clock) * 1000)
    if job.recorded is not None:  # the answer's time, not the regrade's
        duration_ms = job.recorded.duration_ms
    artifacts = _artifacts(output) if output else {**kept, **({"calls": calls} if calls else {})}
    verdict = None
    if status.is_scored:
        graded_at = time.monotonic()
        try:
            facts = RunFacts(
                tool_calls=output.tool_calls if output else [],
                usage=output.usage if output else None,
                cost_usd=output.cost_usd if output else None,
                duration_ms=duration_ms,
                llm_calls=output.llm_calls if output else None,
                workspace=output.workspace if output else None,
            )
            verdict = talk.grade if talk else grade(job, answer or "", client, facts)
            if verdict is not None and verdict.failures:
                status = Status.INFRA_ERROR
                error = ErrorInfo(kind="grading_error", message="; ".join(verdict.failures))
        except Exception as exc:  # a grader bug must not lose the answer
            log.exception("job %s: grading raised", job.job_id)
            status = Status.INFRA_ERROR
            error = ErrorInfo(kind="grading_error", message=f"{type(exc).__name__}: {exc}")
        artifacts["grading_ms"] = int((time.monotonic() - graded_at) * 1000)
    result = Result(
        **_about(job),
        status=status,
        answer=answer,
        score=verdict.score if verdict else None,
        passed=verdict.passed if verdict else None,
        hits=verdict.hits if verdict else [],
        misses=verdict.misses if verdict else [],
        reasoning=verdict.reasoning if verdict else None,
        evaluator_results=verdict.evaluator_results if verdict else [],
        usage=output.usage if output else None,
        trajectory=trajectory,
        workspace_changes=changes,
        cost=_cost(job, output),
        started_at=started,
        finished_at=finished,
        duration_ms=duration_ms,
        worker=worker,
        error=error,
        artifacts=artifacts,
        turns=turns,
        regraded_from=job.recorded.campaign_id if job.recorded else None,
    )
    turned = (e for t in result.turns or [] for e in t.evaluator_results)
    judged = [*result.evaluator_results, *turned]
    result.judge_usage, result.judge_cost = judge_spend(judged)
    return masked_result(result, job)


def _answer(job: Job, deadline: float, client: redis.Redis | None) -> ProviderOutput:
    """The target's answer; in a regrade, the answer recorded, with no call."""
    if job.recorded is not None:
        return recorded_output(job.recorded)
    return call_provider(job, deadline, client)


def _responder(deadline: float, client: redis.Redis | None) -> Respond:
    """How a conversation's turns are answered: by the target, or in a regrade as recorded
    (a recorded failure of the whole conversation is raised before any turn)."""

    def respond(asking: Job, number: int) -> ProviderOutput | None:
        if asking.recorded is None:
            return call_provider(asking, deadline, client)
        if number == 1:
            recorded_output(asking.recorded)
        return recorded_turn(asking, number)

    return respond


def _cost(job: Job, output: ProviderOutput | None) -> Cost | None:
    """What the answer cost; none for a regrade's recorded answer, which called no target."""
    if output is None or job.recorded is not None:
        return None
    models = (output.model, job.target.settings.get("model"))
    provider = PRICE_PROVIDERS.get(job.target.kind)
    return cost_of(output.usage, models, output.cost_usd, provider)


def judge_spend(judged: list[EvaluatorResult]) -> tuple[Usage | None, Cost | None]:
    """The judges' tokens and dollars summed over a result's evaluators; no cost when one
    judge's could not be priced (a part would pass for the whole)."""
    spent = [e for e in judged if e.usage is not None or e.cost is not None]
    if not spent:
        return None, None
    usage = Usage(
        input_tokens=sum((e.usage.input_tokens or 0) for e in spent if e.usage),
        output_tokens=sum((e.usage.output_tokens or 0) for e in spent if e.usage),
    )
    costs = [e.cost for e in spent]
    if any(c is None for c in costs):
        return usage, None
    priced = [c for c in costs if c is not None]
    source = "vendor" if all(c.source == "vendor" for c in priced) else "genai-prices"
    return usage, Cost(usd=sum(c.usd for c in priced), source=source)


def never_started(job: Job, worker: str, status: Status, message: str, since: float) -> Result:
    """The result of a job that never reached its provider, e.g. no capacity until its deadline."""
    started, finished = datetime.fromtimestamp(since, UTC), datetime.now(UTC)
    result = Result(
        **_about(job),
        status=status,
        started_at=started,
        finished_at=finished,
        duration_ms=int((finished - started).total_seconds() * 1000),
        worker=worker,
        error=ErrorInfo(kind=status.value, message=message),
    )
    return masked_result(result, job)


def _about(job: Job) -> dict[str, Any]:
    """The fields every result of this job carries, whatever happened to it."""
    return {
        "campaign_id": job.campaign_id,
        "job_id": job.job_id,
        "case_id": job.case_id,
        "dataset": job.dataset,
        "target": job.target.name,
        "repeat": job.repeat,
        "attempt": job.attempt,
        "conversation_id": job.conversation_id,
        "metadata": job.metadata,
        "expected_outcome": job.outcome,
        "reference_answer": job.reference_answer,
        "raw_request": job.request,
        "attempts": job.previous_attempts,
    }


def masked_result(result: Result, job: Job) -> Result:
    """The result with every text in it (answer, errors, reasoning, artifacts, calls, the
    request echoed back) masked of the secrets this worker holds and the target names."""
    return masked_model(result, secret_names(job))


def secret_names(job: Job) -> set[str]:
    """The variables holding the target's secrets: every provider's key variable, the one
    its `api_key` names, and those its `env` reads (an agent's keys for its model server)."""
    names = set(DEFAULT_KEY_VARIABLES)
    key = job.target.settings.get("api_key")
    match = ENV_REFERENCE.fullmatch(key.strip()) if isinstance(key, str) else None
    if match:
        names.add(match.group(1) or match.group(2))
    names.update(references(job.target.settings.get("env", {})))
    return names


def _artifacts(output: ProviderOutput) -> dict[str, Any]:
    extra: dict[str, Any] = {
        k: v
        for k, v in (
            ("model", output.model),
            ("finish_reason", output.finish_reason),
            ("request_id", output.request_id),
        )
        if v is not None
    }
    if output.tool_calls and output.trajectory is None:  # an agent's are its trajectory
        extra["tool_calls"] = output.tool_calls
    return {**extra, **output.artifacts}

"""Running one job's provider call and turning whatever happens into a `Result`.

Every outcome is a result with a status: an answer, a recognised vendor failure, a
timeout, or an unexpected exception (an `infra_error`). Every text of the result is
masked of the secrets this worker holds (`bridge.masking`), the target's own included.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

import redis

from evalrelay.bridge.contract.job import Job
from evalrelay.bridge.masking import masked_model
from evalrelay.bridge.results.changes import WorkspaceChanges
from evalrelay.bridge.results.pricing import PRICE_PROVIDERS, cost_of
from evalrelay.bridge.results.result import (
    Cost,
    ErrorInfo,
    EvaluatorResult,
    Result,
    Status,
    TurnResult,
    Usage,
)
from evalrelay.bridge.results.trajectory import Trajectory
from evalrelay.bridge.targets.interpolation import references
from evalrelay.bridge.targets.settings import DEFAULT_KEY_VARIABLES, ENV_REFERENCE
from evalrelay.worker.conversation import Conversation, Respond, converse
from evalrelay.worker.grading.grade import grade, grades_at_once
from evalrelay.worker.grading.run_facts import RunFacts
from evalrelay.worker.providers.base import NoCapacity, ProviderFailure, ProviderOutput, Steered
from evalrelay.worker.providers.call import call_provider, call_provider_async
from evalrelay.worker.recorded import recorded_output, recorded_turn
from evalrelay.worker.trials.outcome import TrialOutcome
from evalrelay.worker.trials.trial import run_trial

log = logging.getLogger(__name__)


def execute(job: Job, worker: str, client: redis.Redis | None = None) -> Result:
    began = Began.now()
    if job.task is not None:
        return trial_result(job, worker, client, began)
    answered = answer_of(job, lambda: _output(job, began.clock, client))
    return graded_result(job, worker, client, answered, began)


AT_ONCE_CHARS = 20_000
"""An answer longer than this is graded on a thread even by checks that only compute:
comparing a long answer (an edit distance, a JSON search) would hold up every call on
the worker's event loop."""


async def execute_async(job: Job, worker: str, client: redis.Redis | None = None) -> Result:
    """`execute` on the worker's event loop (`worker.batches`): the target is called with the
    vendor's async client; a conversation, a regrade's recorded answer and grading that
    waits (judges, scripts) run on a thread, not on the loop."""
    if job.conversation is not None or job.recorded is not None:
        return await asyncio.to_thread(execute, job, worker, client)
    began = Began.now()
    try:
        deadline = began.clock + job.timeout_seconds
        output = await call_provider_async(job, deadline, client, steered=True)
    except (NoCapacity, Steered):
        raise
    except Exception as exc:
        answered = failure_of(job, exc)
    else:
        answered = answered_by(output)
    if grades_at_once(job) and len(answered.answer or "") <= AT_ONCE_CHARS:
        return graded_result(job, worker, client, answered, began)
    return await asyncio.to_thread(graded_result, job, worker, client, answered, began)


@dataclass(frozen=True)
class Began:
    """When a job started: wall time for the result, the monotonic clock for its deadline."""

    at: datetime
    clock: float

    @classmethod
    def now(cls) -> Began:
        return cls(datetime.now(UTC), time.monotonic())


@dataclass
class Answered:
    """What calling the target gave: an output or a failure, before grading."""

    status: Status
    output: ProviderOutput | None = None
    answer: str | None = None
    error: ErrorInfo | None = None
    trajectory: Trajectory | None = None
    changes: WorkspaceChanges | None = None
    artifacts: dict[str, Any] = field(default_factory=dict)
    turns: list[TurnResult] | None = None
    talk: Conversation | None = None


def answer_of(job: Job, call: Callable[[], ProviderOutput | Conversation]) -> Answered:
    """The target's answer, or the failure that stood for it: every outcome is one, but
    `NoCapacity` and `Steered` (not results: the job goes back to its queue)."""
    try:
        got = call()
    except (NoCapacity, Steered):
        raise
    except Exception as exc:
        return failure_of(job, exc)
    return answered_by(got)


def failure_of(job: Job, exc: Exception) -> Answered:
    """A vendor's failure as its status says; anything unrecognised is an infrastructure
    error, never a crash."""
    if isinstance(exc, ProviderFailure):
        return Answered(
            status=exc.status,
            error=ErrorInfo(kind=exc.kind, message=exc.message),
            trajectory=exc.trajectory,
            changes=exc.workspace_changes,
            artifacts={**exc.artifacts, **({"calls": exc.calls} if exc.calls else {})},
            turns=exc.turns,
        )
    log.error("job %s: provider raised", job.job_id, exc_info=exc)
    return Answered(
        status=Status.INFRA_ERROR, error=ErrorInfo(kind=type(exc).__name__, message=str(exc))
    )


def answered_by(got: ProviderOutput | Conversation) -> Answered:
    talk = got if isinstance(got, Conversation) else None
    output = got.output if isinstance(got, Conversation) else got
    answered = Answered(
        status=Status.OK,
        output=output,
        answer=output.answer,
        trajectory=output.trajectory,
        changes=output.workspace_changes,
        artifacts=_artifacts(output),
        turns=talk.turns if talk else None,
        talk=talk,
    )
    if output.model_failure:
        answered.status = Status.MODEL_FAILURE
        answered.error = ErrorInfo(kind=Status.MODEL_FAILURE.value, message=output.model_failure)
    return answered


def graded_result(
    job: Job, worker: str, client: redis.Redis | None, answered: Answered, began: Began
) -> Result:
    """The job's result: its answer graded when it has one to grade, masked."""
    finished, duration_ms = datetime.now(UTC), int((time.monotonic() - began.clock) * 1000)
    if job.recorded is not None:  # the answer's time, not the regrade's
        duration_ms = job.recorded.duration_ms
    output, status, error = answered.output, answered.status, answered.error
    artifacts = dict(answered.artifacts)
    verdict = None
    if status.is_scored:
        graded_at = time.monotonic()
        try:
            facts = RunFacts(
                tool_calls=output.tool_calls if output else [],
                usage=output.usage if output else None,
                cost_usd=priced.usd if (priced := _cost(job, output)) else None,
                duration_ms=duration_ms,
                llm_calls=output.llm_calls if output else None,
                workspace=output.workspace if output else None,
            )
            talk = answered.talk
            verdict = talk.grade if talk else grade(job, answered.answer or "", client, facts)
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
        answer=answered.answer,
        score=verdict.score if verdict else None,
        passed=verdict.passed if verdict else None,
        hits=verdict.hits if verdict else [],
        misses=verdict.misses if verdict else [],
        reasoning=verdict.reasoning if verdict else None,
        evaluator_results=verdict.evaluator_results if verdict else [],
        usage=output.usage if output else None,
        trajectory=answered.trajectory,
        workspace_changes=answered.changes,
        cost=_cost(job, output),
        started_at=began.at,
        finished_at=finished,
        duration_ms=duration_ms,
        worker=worker,
        error=error,
        artifacts=artifacts,
        turns=answered.turns,
        regraded_from=job.recorded.campaign_id if job.recorded else None,
    )
    turned = (e for t in result.turns or [] for e in t.evaluator_results)
    judged = [*result.evaluator_results, *turned]
    result.judge_usage, result.judge_cost = judge_spend(judged)
    return masked_result(result, job)


def trial_result(job: Job, worker: str, client: redis.Redis | None, began: Began) -> Result:
    """A container task's trial as its result: the verifier's reward is the score."""
    if client is None:
        raise RuntimeError("a container task's files come from the worker's Redis")
    try:
        deadline = began.clock + job.timeout_seconds
        outcome = run_trial(job, worker, client, deadline, secret_names(job))
    except NoCapacity:
        raise
    except Exception as exc:
        log.error("job %s: the trial raised", job.job_id, exc_info=exc)
        outcome = TrialOutcome(status=Status.INFRA_ERROR, error=f"{type(exc).__name__}: {exc}")
    finished = datetime.now(UTC)
    reward = outcome.reward
    artifacts: dict[str, Any] = {}
    if outcome.bundle:
        artifacts = {
            "trial_dir": outcome.trial_dir,
            "files": outcome.files,
            "bundle": outcome.bundle,
        }
    result = Result(
        **_about(job),
        status=outcome.status,
        answer=outcome.agent_output or None,
        score=reward,
        passed=None if reward is None else reward >= 1.0,
        rewards=outcome.rewards or None,
        steps=outcome.steps,
        timings=outcome.timings,
        trajectory=outcome.trajectory,
        started_at=began.at,
        finished_at=finished,
        duration_ms=int((time.monotonic() - began.clock) * 1000),
        worker=worker,
        error=ErrorInfo(kind=outcome.status.value, message=outcome.error)
        if outcome.error
        else None,
        artifacts=artifacts,
    )
    return masked_result(result, job)


def _output(job: Job, clock: float, client: redis.Redis | None) -> ProviderOutput | Conversation:
    deadline = clock + job.timeout_seconds
    if job.conversation is not None:
        return converse(job, _responder(deadline, client), client)
    return _answer(job, deadline, client)


def _answer(job: Job, deadline: float, client: redis.Redis | None) -> ProviderOutput:
    """The target's answer; in a regrade, the answer recorded, with no call."""
    if job.recorded is not None:
        return recorded_output(job.recorded)
    return call_provider(job, deadline, client, steered=True)


def _responder(deadline: float, client: redis.Redis | None) -> Respond:
    """How a conversation's turns are answered: by the target, or in a regrade as recorded
    (a recorded failure of the whole conversation is raised before any turn)."""

    def respond(asking: Job, number: int) -> ProviderOutput | None:
        if asking.recorded is None:
            return call_provider(asking, deadline, client, steered=True)
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

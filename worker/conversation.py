"""Conversation mode, as AgentV runs it: the turns are sent one by one, each with the
target's own earlier answers as history; each answer is graded by its turn's evaluators;
the case's evaluators grade the whole transcript; the case's score aggregates them all.

The whole conversation is one job and one result line, its turns listed in it.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Sequence
from typing import NamedTuple

import redis

from evalrelay.bridge.contract.job import Job
from evalrelay.bridge.contract.turns import ConversationPlan, TurnPlan
from evalrelay.bridge.prompt.messages import ChatMessage, user
from evalrelay.bridge.prompt.request import api_messages
from evalrelay.bridge.results.result import TurnResult, Usage
from evalrelay.worker.grading.grade import Grade, grade
from evalrelay.worker.grading.run_facts import RunFacts
from evalrelay.worker.providers.base import ProviderFailure, ProviderOutput

log = logging.getLogger(__name__)

Respond = Callable[[Job, int], ProviderOutput | None]
"""The answer to a turn (its job asks the whole history so far; the turn counts from 1);
None when there is none to grade (a regrade of a turn never answered)."""


class Conversation(NamedTuple):
    output: ProviderOutput
    """The last answer; the usage, tool calls and vendor calls of every turn."""
    grade: Grade | None
    turns: list[TurnResult]


def converse(job: Job, respond: Respond, client: redis.Redis | None = None) -> Conversation:
    """Run the job's turns. A failure that is not the model's (rate limit, timeout, server)
    ends the conversation as that failure, with the turns done so far: unlike AgentV, which
    scores it 0, evalrelay never counts such a failure in a score."""
    plan, began = _plan(job), time.monotonic()
    history = api_messages(job.request)
    turns: list[TurnResult] = []
    outputs: list[ProviderOutput] = []
    stop_reason: str | None = None
    for number, turn in enumerate(plan.turns, 1):
        if stop_reason:
            turns.append(skipped(number, turn.input, stop_reason))
            continue
        asked, asked_at = [*history, user(turn.input)], time.monotonic()
        try:
            output = respond(_asking(job, asked), number)
        except ProviderFailure as failure:
            failure.turns = turns
            raise
        if output is None:
            turns.append(skipped(number, turn.input, "no answer to this turn was recorded"))
            continue
        outputs.append(output)
        history = [*asked, ChatMessage(role="assistant", content=output.answer)]
        took = _ms(asked_at)
        turns.append(graded_turn(job, number, turn, asked, output, client, took))
        if plan.on_turn_failure == "stop" and turns[-1].passed is False:
            stop_reason = f"turn {number} failed and on_turn_failure is stop"
    whole = _whole(job, history, outputs, client, _ms(began))
    return Conversation(_combined(outputs), aggregate(turns, whole, job), turns)


def _plan(job: Job) -> ConversationPlan:
    if job.conversation is None:
        raise ValueError(f"job {job.job_id} is not a conversation")
    return job.conversation


def skipped(number: int, text: str, why: str) -> TurnResult:
    """A turn not sent scores 0, as in AgentV."""
    return TurnResult(
        turn=number,
        input=text,
        status="skipped",
        score=0.0,
        passed=False,
        misses=[f"not sent: {why}"],
        error=why,
    )


def graded_turn(
    job: Job,
    number: int,
    turn: TurnPlan,
    asked: list[ChatMessage],
    output: ProviderOutput,
    client: redis.Redis | None,
    duration_ms: int | None = None,
) -> TurnResult:
    """The answer graded by the turn's evaluators only: a refusal or an empty answer scores
    0 unread; a turn with no evaluators scores 1."""
    about = {"turn": number, "input": turn.input, "answer": output.answer, "usage": output.usage}
    if output.model_failure:
        return TurnResult(
            **about, status="model_failure", score=0.0, passed=False, error=output.model_failure
        )
    if not turn.evaluators:
        return TurnResult(**about, status="ok", score=1.0, passed=True)
    grader = _asking(job, asked).model_copy(
        update={
            "evaluators": turn.evaluators,
            "reference_answer": turn.reference_answer,
            "outcome": None,
        }
    )
    facts = RunFacts(tool_calls=output.tool_calls, usage=output.usage, duration_ms=duration_ms)
    verdict = _graded(grader, output.answer, client, facts)
    if verdict is None:  # not reached: the turn has evaluators
        return TurnResult(**about, status="ok", score=1.0, passed=True)
    return TurnResult(
        **about,
        status="ok",
        score=verdict.score,
        passed=verdict.passed,
        hits=verdict.hits,
        misses=verdict.misses,
        reasoning=verdict.reasoning,
        evaluator_results=verdict.evaluator_results,
        error="; ".join(verdict.failures) or None,
    )


def _whole(
    job: Job,
    history: list[ChatMessage],
    outputs: list[ProviderOutput],
    client: redis.Redis | None,
    duration_ms: int,
) -> Grade | None:
    """The case's own evaluators grade the whole transcript, as AgentV has them."""
    if not job.evaluators:
        return None
    text = transcript(history)
    whole = _asking(job, history)
    facts = RunFacts(
        tool_calls=[call for output in outputs for call in output.tool_calls],
        usage=_usage(outputs),
        duration_ms=duration_ms,
    )
    return _graded(whole, text, client, facts)


def _graded(job: Job, answer: str, client: redis.Redis | None, facts: RunFacts) -> Grade | None:
    """A grader's bug is a failure of this grade, never the loss of the turns answered."""
    try:
        return grade(job, answer, client, facts)
    except Exception as exc:
        log.exception("job %s: grading raised", job.job_id)
        return Grade(
            score=None, passed=None, evaluator_results=[], failures=[f"{type(exc).__name__}: {exc}"]
        )


def _threshold(job: Job) -> float:
    """A conversation under promptfoo grading with no threshold passes at a full score."""
    return job.pass_threshold if job.pass_threshold is not None else 1.0


def aggregate(turns: list[TurnResult], whole: Grade | None, job: Job) -> Grade:
    """The case's score: the turns' scores and the transcript's, by `aggregation` (mean,
    min or max), passed at the case's threshold; null when an evaluator could not judge."""
    plan = _plan(job)
    failures = [f"turn {t.turn}: {t.error}" for t in turns if t.status == "ok" and t.error]
    failures += [f"conversation: {f}" for f in whole.failures] if whole else []
    scores = [t.score for t in turns] + ([whole.score] if whole else [])
    score = None if failures or None in scores else _aggregated(scores, plan.aggregation)
    labelled = [(f"turn {t.turn}", t.hits, t.misses, t.reasoning) for t in turns]
    if whole:
        labelled.append(("conversation", whole.hits, whole.misses, whole.reasoning))
    return Grade(
        score=score,
        passed=None if score is None else score >= _threshold(job),
        hits=[f"{label}: {h}" for label, hits, _, _ in labelled for h in hits],
        misses=[f"{label}: {m}" for label, _, misses, _ in labelled for m in misses],
        reasoning=" | ".join(f"{label}: {r}" for label, _, _, r in labelled if r) or None,
        evaluator_results=whole.evaluator_results if whole else [],
        failures=failures,
    )


def _aggregated(scores: Sequence[float | None], how: str) -> float:
    values = [s for s in scores if s is not None]
    if not values:
        return 1.0
    if how == "min":
        return min(values)
    if how == "max":
        return max(values)
    return round(sum(values) / len(values), 6)


def _asking(job: Job, messages: list[ChatMessage]) -> Job:
    """The job asking these messages: what the provider sends, and what a judge reads."""
    request = job.request.model_copy(
        update={"chat_prompt": messages, "question": transcript(messages)}
    )
    return job.model_copy(update={"request": request})


def transcript(messages: Sequence[ChatMessage]) -> str:
    """`[Role]: text` per message, as a multi-turn case's question is written."""
    return "\n".join(f"[{m.role.capitalize()}]: {m.content}" for m in messages)


def _combined(outputs: list[ProviderOutput]) -> ProviderOutput:
    last = outputs[-1] if outputs else ProviderOutput(answer="")
    calls = [call for output in outputs for call in output.artifacts.get("calls", [])]
    return last.model_copy(
        update={
            "usage": _usage(outputs),
            "tool_calls": [call for output in outputs for call in output.tool_calls],
            "model_failure": None,  # a turn's failure is that turn's verdict
            "artifacts": {**last.artifacts, **({"calls": calls} if calls else {})},
        }
    )


def _ms(since: float) -> int:
    return int((time.monotonic() - since) * 1000)


def _usage(outputs: list[ProviderOutput]) -> Usage | None:
    used = [o.usage for o in outputs if o.usage is not None]
    if not used:
        return None
    return Usage(
        input_tokens=sum(u.input_tokens or 0 for u in used),
        output_tokens=sum(u.output_tokens or 0 for u in used),
    )

"""An evalrelay result as an Inspect AI eval-log sample: its messages, output, scores,
events (the transcript the viewer opens) and metadata.

A result becomes a sample: its id the case id (`dataset/case` when the campaign has several
datasets), its epoch the repeat + 1, its input the messages the target was sent, its
output the answer. The result's score is the score `evalrelay` (the metadata says whether
it passed); each evaluator's score is a score of its own. A job that ended without an
answer to grade (infrastructure, limits, timeouts, cancelled) is an errored sample.
"""

from __future__ import annotations

import hashlib
import json
from datetime import datetime
from typing import Any

from evalrelay.bridge.prompt.request import PromptRequest, api_messages
from evalrelay.bridge.reports import inspect_models as inspect
from evalrelay.bridge.results.result import ErrorInfo, EvaluatorResult, Result, Status, Usage

SCORE = "evalrelay"
"""The name of the result's own score, beside one score per evaluator."""


def inspect_sample(result: Result, sample_id: str, model: str) -> inspect.EvalSample:
    uuid = stable_id("sample", result.campaign_id, result.job_id, str(result.attempt))
    inputs = input_messages(result.raw_request, uuid)
    output = model_output(result, model, f"{uuid}-output")
    graded = scores(result)
    error = None if result.status.is_scored else inspect.EvalError.of(error_text(result))
    seconds = result.duration_ms / 1000
    return inspect.EvalSample(
        id=sample_id,
        epoch=result.repeat + 1,
        input=inputs,
        target=result.reference_answer or result.expected_outcome or "",
        messages=[*inputs, *(choice.message for choice in output.choices)],
        output=output,
        scores=graded or None,
        metadata=sample_metadata(result),
        events=events(result, uuid, inputs, output, graded, error),
        model_usage={model: output.usage} if output.usage else {},
        started_at=iso(result.started_at),
        completed_at=iso(result.finished_at),
        total_time=seconds,
        working_time=seconds,
        uuid=uuid,
        error=error,
        error_retries=[
            inspect.EvalError.of(_attempt_error(a.error, a.status)) for a in result.attempts
        ]
        or None,
    )


def events(
    result: Result,
    uuid: str,
    inputs: list[inspect.ChatMessage],
    output: inspect.ModelOutput,
    graded: dict[str, inspect.Score],
    error: inspect.EvalError | None,
) -> list[inspect.Event]:
    """The transcript the viewer opens a sample on: the call to the target, then each
    score, or the error that ended the job. Without them that tab is empty."""
    began, ended = iso(result.started_at), iso(result.finished_at)
    seconds = result.duration_ms / 1000
    messages = [*inputs, *(choice.message for choice in output.choices)]
    tools = any(isinstance(m, inspect.AssistantMessage) and m.tool_calls for m in messages)
    happened: list[inspect.Event] = [
        inspect.ModelEvent(
            timestamp=began,
            model=output.model,
            input=inputs,
            tool_choice="auto" if tools else "none",
            output=output,
            error=output.error,
            completed=ended,
            working_time=seconds,
        )
    ]
    happened += tool_events(result)
    happened += [
        inspect.ScoreEvent(timestamp=ended, working_start=seconds, score=score, scorer=name)
        for name, score in graded.items()
    ]
    if error is not None:
        happened.append(inspect.ErrorEvent(timestamp=ended, working_start=seconds, error=error))
    for n, event in enumerate(happened):
        event.uuid = f"{uuid}-event-{n}"
    return happened


def tool_events(result: Result) -> list[inspect.Event]:
    """An agent's trajectory, a tool event per step. The agents report how long a step took,
    not when it started: each is stamped with the job's start."""
    trajectory = result.trajectory
    if trajectory is None:
        return []
    began = iso(result.started_at)
    return [
        inspect.ToolEvent(
            timestamp=began,
            id=f"step-{n}",
            function=step.tool,
            arguments=step.arguments,
            result=step.output or "",
            truncated=(len(step.output or "") + step.output_chars_cut, len(step.output or ""))
            if step.output_chars_cut
            else None,
            error=inspect.ToolCallError(message=step.output or f"{step.tool} failed")
            if step.ok is False
            else None,
            working_time=step.duration_ms / 1000 if step.duration_ms is not None else None,
            agent=trajectory.agent,
            failed=True if step.ok is False else None,
        )
        for n, step in enumerate(trajectory.steps)
    ]


def input_messages(request: PromptRequest, uuid: str) -> list[inspect.ChatMessage]:
    """The messages the target was sent; a tool message names the function whose call it
    answers, as Inspect's do."""
    functions: dict[str, str] = {}
    messages: list[inspect.ChatMessage] = []
    for n, message in enumerate(api_messages(request)):
        common: dict[str, Any] = {
            "id": f"{uuid}-{n}",
            "content": message.content,
            "source": "input",
        }
        if message.role == "system":
            messages.append(inspect.SystemMessage(**common))
        elif message.role == "user":
            messages.append(inspect.UserMessage(**common))
        elif message.role == "assistant":
            calls = [
                _tool_call(c.id, c.name, c.arguments, f"{uuid}-{n}-{k}")
                for k, c in enumerate(message.tool_calls or [])
            ]
            functions.update((c.id, c.function) for c in calls)
            messages.append(inspect.AssistantMessage(**common, tool_calls=calls or None))
        else:
            call = message.tool_call_id
            messages.append(
                inspect.ToolMessage(**common, tool_call_id=call, function=functions.get(call or ""))
            )
    return messages


def _tool_call(call_id: Any, name: Any, arguments: Any, fallback_id: str) -> inspect.ToolCall:
    if isinstance(arguments, str):
        try:
            arguments = json.loads(arguments) if arguments.strip() else {}
        except ValueError:
            arguments = {"arguments": arguments}
    if not isinstance(arguments, dict):
        arguments = {"arguments": arguments}
    return inspect.ToolCall(id=str(call_id or fallback_id), function=str(name), arguments=arguments)


def model_output(result: Result, model: str, message_id: str) -> inspect.ModelOutput:
    reported = result.artifacts.get("model")
    reported = reported if isinstance(reported, str) and reported else model
    calls = [
        _tool_call(c.get("id"), c.get("name"), c.get("arguments"), f"{message_id}-{k}")
        for k, c in enumerate(result.artifacts.get("tool_calls") or [])
        if isinstance(c, dict)
    ]
    choices = []
    if result.answer is not None or calls:
        message = inspect.AssistantMessage(
            id=message_id,
            content=result.answer or "",
            source="generate",
            tool_calls=calls or None,
            model=reported,
        )
        choices = [
            inspect.ChatCompletionChoice(message=message, stop_reason=stop_reason(result, calls))
        ]
    latency = result.artifacts.get("latency_ms")
    return inspect.ModelOutput(
        model=reported,
        choices=choices,
        completion=result.answer or "",
        usage=model_usage(result.usage),
        time=latency / 1000 if isinstance(latency, int | float) else None,
        error=error_text(result) if result.status is Status.MODEL_FAILURE else None,
    )


STOP_REASONS: dict[str, inspect.StopReason] = {
    **dict.fromkeys(("stop", "end_turn", "stop_sequence", "completed", "finish"), "stop"),
    **dict.fromkeys(("length", "max_tokens", "max_output_tokens", "incomplete"), "max_tokens"),
    **dict.fromkeys(("tool_calls", "tool_use", "function_call"), "tool_calls"),
    **dict.fromkeys(("content_filter", "safety", "refusal", "recitation"), "content_filter"),
}
"""The vendors' finish reasons (OpenAI, Anthropic, Gemini) as Inspect names them."""


def stop_reason(result: Result, calls: list[inspect.ToolCall]) -> inspect.StopReason:
    given = result.artifacts.get("finish_reason")
    if isinstance(given, str) and given.lower() in STOP_REASONS:
        return STOP_REASONS[given.lower()]
    if calls:
        return "tool_calls"
    return "stop" if result.status is Status.OK else "unknown"


USAGE_NAMES = {
    "input_tokens_cache_read": (
        "input_tokens_cache_read",
        "cache_read_input_tokens",
        "cached_input_tokens",
    ),
    "input_tokens_cache_write": ("input_tokens_cache_write", "cache_creation_input_tokens"),
    "reasoning_tokens": ("reasoning_tokens", "reasoning_output_tokens"),
    "total_cost": ("total_cost", "cost_usd"),
}
"""Inspect's usage fields, and the names providers report them by in a result's usage."""


def model_usage(usage: Usage | None) -> inspect.ModelUsage | None:
    if usage is None:
        return None
    extra = usage.model_extra or {}
    found = {
        field: next((extra[n] for n in names if isinstance(extra.get(n), int | float)), None)
        for field, names in USAGE_NAMES.items()
    }
    given, taken = usage.input_tokens or 0, usage.output_tokens or 0
    total = extra.get("total_tokens")
    return inspect.ModelUsage(
        input_tokens=given,
        output_tokens=taken,
        total_tokens=total if isinstance(total, int) else given + taken,
        **found,
    )


def scores(result: Result) -> dict[str, inspect.Score]:
    """The result's score (when it was graded and is the model's doing), and each
    evaluator's; an evaluator that could not judge gives Inspect's unscored NaN."""
    found: dict[str, inspect.Score] = {}
    if result.status.is_scored and result.score is not None:
        found[SCORE] = inspect.Score(
            value=result.score,
            answer=result.answer,
            explanation=result.reasoning,
            metadata={"passed": result.passed, "hits": result.hits, "misses": result.misses},
        )
    for name, evaluator in zip(
        score_names(result.evaluator_results), result.evaluator_results, strict=True
    ):
        found[name] = evaluator_score(evaluator)
    return found


def score_names(evaluators: list[EvaluatorResult]) -> list[str]:
    """Each evaluator's name, made unique (`contains`, `contains-2`) and never `evalrelay`."""
    names: list[str] = []
    for evaluator in evaluators:
        name, n = evaluator.name, 1
        while name == SCORE or name in names:
            n += 1
            name = f"{evaluator.name}-{n}"
        names.append(name)
    return names


def evaluator_score(evaluator: EvaluatorResult) -> inspect.Score:
    metadata = {
        "type": evaluator.type,
        "weight": evaluator.weight,
        "hits": evaluator.hits,
        "misses": evaluator.misses,
        **({"details": evaluator.details} if evaluator.details else {}),
        **({"error": evaluator.error} if evaluator.error else {}),
    }
    if evaluator.score is None:
        return inspect.Score(
            value=float("nan"),
            reason="scoring_failed",
            explanation=evaluator.error or evaluator.reasoning,
            metadata=metadata,
        )
    return inspect.Score(value=evaluator.score, explanation=evaluator.reasoning, metadata=metadata)


RUN_FACTS = ("dataset", "job_id", "status", "attempt", "worker", "conversation_id", "passed")


def sample_metadata(result: Result) -> dict[str, Any]:
    """The case's metadata, as Inspect keeps a sample's, and how the job ran; a case key
    that is also one of those is kept as `case_<key>`."""
    run: dict[str, Any] = {name: getattr(result, name) for name in RUN_FACTS}
    run["status"] = result.status.value
    if result.reference_answer and result.expected_outcome:
        run["expected_outcome"] = result.expected_outcome
    if result.artifacts:
        run["artifacts"] = result.artifacts
    case = {(f"case_{k}" if k in run else k): v for k, v in result.metadata.items()}
    return {**case, **{k: v for k, v in run.items() if v is not None}}


def error_text(result: Result) -> str:
    return _attempt_error(result.error, result.status)


def _attempt_error(error: ErrorInfo | None, status: Status) -> str:
    return f"{error.kind}: {error.message}" if error is not None else status.value


def stable_id(*parts: str) -> str:
    """A 22-character id like Inspect's (shortuuid's alphabet), the same at every export."""
    digest = int.from_bytes(hashlib.blake2s("\0".join(parts).encode(), digest_size=16).digest())
    text = ""
    for _ in range(22):
        digest, digit = divmod(digest, len(ALPHABET))
        text += ALPHABET[digit]
    return text


ALPHABET = "23456789ABCDEFGHJKLMNPQRSTUVWXYZabcdefghijkmnopqrstuvwxyz"


def iso(moment: datetime | None) -> str:
    return moment.isoformat() if moment is not None else ""

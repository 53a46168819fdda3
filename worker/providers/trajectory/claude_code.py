"""Claude Code's `stream-json` messages as steps: each `tool_use` block of an assistant
message, with the `tool_result` that answered it; times from the events' timestamps,
tokens from the assistant message that asked."""

from __future__ import annotations

from typing import Any

from evalrelay.bridge.results.trajectory import StepKind, Trajectory, TrajectoryStep
from evalrelay.worker.providers.trajectory.steps import (
    kept,
    milliseconds_between,
    step,
    token_counts,
)

KINDS: dict[str, StepKind] = {
    "Read": "read",
    "NotebookRead": "read",
    "Bash": "command",
    "BashOutput": "command",
    "Edit": "edit",
    "MultiEdit": "edit",
    "Write": "edit",
    "NotebookEdit": "edit",
    "Grep": "search",
    "Glob": "search",
    "LS": "search",
    "WebFetch": "web",
    "WebSearch": "web",
}
_PATH_KEYS = ("file_path", "notebook_path", "path")


def claude_trajectory(events: list[dict[str, Any]]) -> Trajectory:
    asked: list[tuple[dict[str, Any], dict[str, Any], dict[str, int] | None]] = []
    answers: dict[str, tuple[dict[str, Any], dict[str, Any]]] = {}
    model_calls = 0
    for event in events:
        message = event.get("message")
        if not isinstance(message, dict) or not isinstance(message.get("content"), list):
            continue
        blocks = [b for b in message["content"] if isinstance(b, dict)]
        if event.get("type") == "assistant":
            model_calls += 1
            usage = message.get("usage")
            for block in (b for b in blocks if b.get("type") == "tool_use"):
                first = not any(a[1] is event for a in asked)
                asked.append((block, event, token_counts(usage) if first else None))
        elif event.get("type") == "user":
            for block in (b for b in blocks if b.get("type") == "tool_result"):
                answers[str(block.get("tool_use_id"))] = (block, event)
    steps = [_step(block, event, usage, answers) for block, event, usage in asked]
    result: dict[str, Any] = next((e for e in reversed(events) if e.get("type") == "result"), {})
    cost, duration = result.get("total_cost_usd"), result.get("duration_ms")
    return kept(
        "claude",
        steps,
        model_calls=model_calls,
        usage=token_counts(result.get("usage")),
        cost_usd=cost if isinstance(cost, int | float) else None,
        duration_ms=duration if isinstance(duration, int) else None,
    )


def _step(
    block: dict[str, Any],
    event: dict[str, Any],
    usage: dict[str, int] | None,
    answers: dict[str, tuple[dict[str, Any], dict[str, Any]]],
) -> TrajectoryStep:
    name = str(block.get("name", ""))
    given = block.get("input")
    arguments: dict[str, Any] = given if isinstance(given, dict) else {}
    reply, replied = answers.get(str(block.get("id")), ({}, {}))
    paths = [str(arguments[k]) for k in _PATH_KEYS if isinstance(arguments.get(k), str)]
    return step(
        name,
        KINDS.get(name, "tool"),
        arguments,
        reply.get("content") if reply else None,
        ok=(not reply.get("is_error")) if reply else None,
        paths=paths[:1],
        duration_ms=milliseconds_between(event.get("timestamp"), replied.get("timestamp"))
        if replied
        else None,
        usage=usage,
    )

"""Copilot CLI's JSONL events as steps: each `tool.execution_start` with its
`tool.execution_complete`, timed by their timestamps."""

from __future__ import annotations

from typing import Any

from evalrelay.bridge.results.trajectory import StepKind, Trajectory, TrajectoryStep
from evalrelay.worker.providers.trajectory.steps import kept, milliseconds_between, step

KINDS: dict[str, StepKind] = {
    "view": "read",
    "bash": "command",
    "shell": "command",
    "powershell": "command",
    "write_bash": "command",
    "read_bash": "command",
    "create": "edit",
    "edit": "edit",
    "str_replace": "edit",
    "str_replace_editor": "edit",
    "apply_patch": "edit",
    "grep": "search",
    "glob": "search",
    "web_fetch": "web",
}


def copilot_trajectory(events: list[dict[str, Any]]) -> Trajectory:
    done = {
        str(e.get("data", {}).get("toolCallId")): e
        for e in events
        if e.get("type") == "tool.execution_complete" and isinstance(e.get("data"), dict)
    }
    steps: list[TrajectoryStep] = []
    for event in events:
        data = event.get("data")
        if event.get("type") != "tool.execution_start" or not isinstance(data, dict):
            continue
        name = str(data.get("toolName", ""))
        steps.append(_step(name, data, event, done.get(str(data.get("toolCallId")))))
    model_calls = sum(1 for e in events if e.get("type") == "assistant.message")
    result: dict[str, Any] = next((e for e in reversed(events) if e.get("type") == "result"), {})
    usage = _mapping(result.get("usage"))
    duration = usage.get("sessionDurationMs")
    return kept(
        "copilot",
        steps,
        model_calls=model_calls,
        duration_ms=duration if isinstance(duration, int) else None,
    )


def _step(
    name: str, data: dict[str, Any], started: dict[str, Any], finished: dict[str, Any] | None
) -> TrajectoryStep:
    arguments = _mapping(data.get("arguments"))
    outcome = _mapping(finished.get("data")) if finished else {}
    result = _mapping(outcome.get("result"))
    edits = [e.get("path") for e in outcome.get("fileEdits") or [] if isinstance(e, dict)]
    path = arguments.get("path")
    return step(
        name,
        KINDS.get(name, "tool"),
        arguments,
        result.get("content") if finished else None,
        ok=outcome.get("success") if isinstance(outcome.get("success"), bool) else None,
        paths=[str(p) for p in edits if p] or ([path] if isinstance(path, str) else []),
        duration_ms=milliseconds_between(started.get("timestamp"), finished.get("timestamp"))
        if finished
        else None,
    )


def _mapping(value: Any) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}

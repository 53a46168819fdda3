"""Codex's `exec --json` items as steps: commands (a plain `cat` is a read), file
changes, MCP tool calls and web searches. Codex reports no per-step times, and tokens
only per turn."""

from __future__ import annotations

from typing import Any

from evalrelay.bridge.results.trajectory import Trajectory, TrajectoryStep
from evalrelay.worker.providers.trajectory.steps import command_kind, kept, step, token_counts


def codex_trajectory(events: list[dict[str, Any]]) -> Trajectory:
    steps: list[TrajectoryStep] = []
    for event in events:
        item = event.get("item")
        if event.get("type") != "item.completed" or not isinstance(item, dict):
            continue
        made = _step(item)
        if made is not None:
            steps.append(made)
    turns = [e for e in events if e.get("type") == "turn.completed"]
    usage = turns[-1].get("usage") if turns else None
    return kept(
        "codex",
        steps,
        usage=token_counts(usage),
    )


def _step(item: dict[str, Any]) -> TrajectoryStep | None:
    kind = item.get("type")
    if kind == "command_execution":
        command = str(item.get("command", ""))
        step_kind, paths = command_kind(command)
        code = item.get("exit_code")
        return step(
            "command_execution",
            step_kind,
            {"command": command},
            item.get("aggregated_output", ""),
            ok=code == 0 if isinstance(code, int) else None,
            paths=paths,
        )
    if kind == "file_change":
        changes = [c for c in item.get("changes") or [] if isinstance(c, dict)]
        return step(
            "file_change",
            "edit",
            {"changes": changes},
            ok=item.get("status") == "completed",
            paths=[str(c.get("path")) for c in changes],
        )
    if kind == "mcp_tool_call":
        error = item.get("error")
        return step(
            f"{item.get('server')}/{item.get('tool')}",
            "tool",
            item.get("arguments"),
            error if error else item.get("result"),
            ok=not error and item.get("status") == "completed",
        )
    if kind == "web_search":
        return step("web_search", "web", {"query": item.get("query")})
    return None

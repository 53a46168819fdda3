"""Anthropic's Claude Code CLI: `claude -p --output-format stream-json`, the task on stdin.

The flags are those AgentV's `claude-code` provider uses. The answer is the `result`
event's text; an `is_error` result is an API failure (an `infra_error`, or `rate_limited`
and the like by its HTTP status), except that stopping at `max_turns` or
`max_budget_usd` is the model's failure. Each concurrent run gets a CLAUDE_CONFIG_DIR of
its own, and Claude Code's telemetry, error reports and update checks are off: the model
server is the only thing it talks to.
"""

from __future__ import annotations

import logging
import shlex
from pathlib import Path
from typing import Any

from evalrelay.bridge.results.result import Usage
from evalrelay.bridge.results.trajectory import Trajectory
from evalrelay.bridge.targets.settings import ClaudeCodeTarget
from evalrelay.worker.agents.inputs import InputFile
from evalrelay.worker.agents.runner import AgentRun
from evalrelay.worker.agents.workspace import AttemptWorkspace
from evalrelay.worker.providers.agent_cli import CommandLineAgent
from evalrelay.worker.providers.base import ProviderFailure, ProviderOutput
from evalrelay.worker.providers.failures import classify_http, shorten
from evalrelay.worker.providers.trajectory.claude_code import claude_trajectory

log = logging.getLogger(__name__)

QUIET = {
    "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
    "DISABLE_TELEMETRY": "1",
    "DISABLE_ERROR_REPORTING": "1",
    "DISABLE_AUTOUPDATER": "1",
}
"""Claude Code's switches for everything but model calls; a target's `env` may turn one back."""

OUT_OF_LIMITS = {"error_max_turns": "max_turns", "error_max_budget_usd": "max_budget_usd"}
"""Result subtypes for an agent stopped by a limit of the target's, before it finished."""


class ClaudeCodeProvider(CommandLineAgent):
    settings: ClaudeCodeTarget
    kind = "claude"
    title = "Claude Code"
    home_variable = "CLAUDE_CONFIG_DIR"
    usual_home = ".claude"
    home_seeds = ("settings.json", ".credentials.json")
    vendor_variables = (
        "ANTHROPIC_API_KEY",
        "ANTHROPIC_AUTH_TOKEN",
        "ANTHROPIC_BASE_URL",
        "ANTHROPIC_MODEL",
        "ANTHROPIC_SMALL_FAST_MODEL",
    )

    def command(
        self, executable: str, workspace: AttemptWorkspace, inputs: list[InputFile]
    ) -> tuple[list[str], str | None]:
        settings = self.settings
        argv = [executable, *_words(settings.executable)[1:]]
        argv += ["-p", "--output-format", "stream-json", "--verbose"]
        for flag, value in (
            ("--model", settings.model),
            ("--permission-mode", settings.permission_mode),
            ("--max-turns", settings.max_turns),
            ("--max-budget-usd", settings.max_budget_usd),
            ("--append-system-prompt", settings.system_prompt),
        ):
            if value is not None:
                argv += [flag, str(value)]
        for flag, tools in (
            ("--allowedTools", settings.allowed_tools),
            ("--disallowedTools", settings.denied_tools),
        ):
            for tool in tools:
                argv += [flag, tool]
        argv += settings.args
        if settings.verbose:
            log.info("target %s runs: %s", settings.name, shlex.join(argv))
        return argv, workspace.task

    def environment(self, home: Path | None) -> dict[str, str]:
        return {**QUIET, **super().environment(home)}

    def trajectory(self, events: list[dict[str, Any]]) -> Trajectory:
        return claude_trajectory(events)

    def answer(
        self, run: AgentRun, events: list[dict[str, Any]], workspace: AttemptWorkspace
    ) -> ProviderOutput:
        result: dict[str, Any] = next(
            (e for e in reversed(events) if e.get("type") == "result"), {}
        )
        if not result:
            why = f"exited with code {run.returncode}" if run.returncode else "finished"
            raise self.failed(run, f"{why} without a result")
        limit = OUT_OF_LIMITS.get(str(result.get("subtype")))
        if result.get("is_error") and limit is None:
            raise self._api_failure(run, result)
        answer = result.get("result")
        if not isinstance(answer, str):
            answer = last_assistant_text(events)
        if limit is not None:
            failure: str | None = f"stopped at its {limit} ({getattr(self.settings, limit)})"
        else:
            failure = None if answer.strip() else "empty answer"
        return ProviderOutput(
            answer=answer,
            usage=_usage(result),
            model=_model(events) or self.settings.model,
            finish_reason=result.get("stop_reason") or result.get("subtype"),
            model_failure=failure,
            artifacts={self.kind: {"result": _summary(result)}},
        )

    def _api_failure(self, run: AgentRun, result: dict[str, Any]) -> ProviderFailure:
        """A failed result: by its HTTP status when the model server gave one."""
        text = str(result.get("result") or "; ".join(map(str, result.get("errors") or [])))
        status = result.get("api_error_status")
        if isinstance(status, int):
            failure = classify_http(status, {}, text)
            return ProviderFailure(failure.status, f"{self.title} got {failure.message}")
        return self.failed(run, f"failed ({result.get('subtype')}): {shorten(text)}")

    def _setting(self, name: str) -> Any:
        if name == "executable":
            return _words(self.settings.executable)[0]
        return super()._setting(name)


def last_assistant_text(events: list[dict[str, Any]]) -> str:
    """The text blocks of the last assistant message that has any."""
    for event in reversed(events):
        message = event.get("message") if event.get("type") == "assistant" else None
        content = message.get("content") if isinstance(message, dict) else None
        texts = [
            str(block.get("text", ""))
            for block in (content if isinstance(content, list) else [])
            if isinstance(block, dict) and block.get("type") == "text"
        ]
        if any(t.strip() for t in texts):
            return "\n".join(texts)
    return ""


def _usage(result: dict[str, Any]) -> Usage | None:
    usage = result.get("usage")
    if not isinstance(usage, dict):
        return None
    counts = {
        key: usage[key]
        for key in (
            "input_tokens",
            "output_tokens",
            "cache_read_input_tokens",
            "cache_creation_input_tokens",
        )
        if isinstance(usage.get(key), int)
    }
    if isinstance(result.get("total_cost_usd"), int | float):
        counts["cost_usd"] = result["total_cost_usd"]
    return Usage(**counts)


def _model(events: list[dict[str, Any]]) -> str | None:
    """The model the session ran, from its `system` `init` event."""
    init = next((e for e in events if e.get("type") == "system" and "model" in e), {})
    return str(init["model"]) if init.get("model") else None


def _summary(result: dict[str, Any]) -> dict[str, Any]:
    keys = ("session_id", "num_turns", "duration_ms", "total_cost_usd", "permission_denials")
    return {key: result[key] for key in keys if key in result}


def _words(executable: str) -> list[str]:
    return shlex.split(executable) or [executable]

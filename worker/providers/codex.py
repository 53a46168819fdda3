"""OpenAI's Codex CLI: `codex exec --json`, the task on standard input.

The answer is the last completed `agent_message` of the event stream, the usage comes
from `turn.completed`, and `turn.failed`, a non-zero exit or no answer at all is an
`infra_error`. Each concurrent run gets a CODEX_HOME of its own.
"""

from __future__ import annotations

import json
import re
from typing import Any

from evalrelay.bridge.results.result import Usage
from evalrelay.bridge.results.trajectory import Trajectory
from evalrelay.bridge.targets.settings import CodexTarget
from evalrelay.worker.agents.inputs import InputFile
from evalrelay.worker.agents.runner import AgentRun
from evalrelay.worker.agents.workspace import AttemptWorkspace
from evalrelay.worker.providers.agent_cli import CommandLineAgent, json_events
from evalrelay.worker.providers.base import ProviderOutput
from evalrelay.worker.providers.trajectory.codex import codex_trajectory

_BARE_KEY = re.compile(r"[A-Za-z0-9_-]+")

CONNECTION_FAILED = "Connection failed"
"""How Codex's `error` events say it cannot reach the model server."""


class CodexProvider(CommandLineAgent):
    settings: CodexTarget
    kind = "codex"
    title = "Codex CLI"
    home_variable = "CODEX_HOME"
    usual_home = ".codex"
    home_seeds = ("config.toml", "auth.json")
    vendor_variables = ("OPENAI_API_KEY", "OPENAI_BASE_URL", "CODEX_API_KEY")

    def command(
        self, executable: str, workspace: AttemptWorkspace, inputs: list[InputFile]
    ) -> tuple[list[str], str | None]:
        settings = self.settings
        argv = [executable, "--ask-for-approval", "never", "exec", "--json", "--color", "never"]
        argv += ["--skip-git-repo-check", "-C", str(workspace.folder)]
        for flag, value in (("-m", settings.model), ("-p", settings.profile)):
            if value:
                argv += [flag, value]
        if settings.sandbox:
            argv += ["-s", settings.sandbox]
        for key, value in settings.config.items():
            argv += ["-c", f"{key}={toml_value(value)}"]
        return [*argv, *settings.args, "-"], workspace.task

    def fatal_error(self, line: str) -> str | None:
        """Codex retries an unreachable model server without end ("Reconnecting... waiting
        for network (Connection failed: ...)"); the first such report ends the job."""
        if '"error"' not in line or CONNECTION_FAILED not in line:
            return None
        (event,) = json_events(line) or [{}]
        if event.get("type") == "error" and CONNECTION_FAILED in str(event.get("message")):
            return f"could not reach its model server: {event['message']}"
        return None

    def trajectory(self, events: list[dict[str, Any]]) -> Trajectory:
        return codex_trajectory(events)

    def answer(
        self, run: AgentRun, events: list[dict[str, Any]], workspace: AttemptWorkspace
    ) -> ProviderOutput:
        failed = [e for e in events if e.get("type") == "turn.failed"]
        if failed:
            raise self.failed(run, f"turn failed: {_message(failed[-1].get('error'))}")
        if run.returncode != 0:
            errors = [_message(e) for e in events if e.get("type") == "error"]
            why = f"exited with code {run.returncode}"
            raise self.failed(run, why + (f": {errors[-1]}" if errors else ""))
        messages = [
            e["item"]
            for e in events
            if e.get("type") == "item.completed"
            and isinstance(e.get("item"), dict)
            and e["item"].get("type") == "agent_message"
        ]
        if not messages:
            raise self.failed(run, "finished without an agent message")
        usage = next(
            (e["usage"] for e in reversed(events) if e.get("type") == "turn.completed"), None
        )
        return ProviderOutput(
            answer=str(messages[-1].get("text", "")),
            usage=Usage(**usage) if isinstance(usage, dict) else None,
            model=self.settings.model,
            model_failure=None if str(messages[-1].get("text", "")).strip() else "empty answer",
        )


def toml_value(value: Any) -> str:
    """A YAML value as the TOML that Codex's `-c key=value` expects."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int | float):
        return str(value)
    if isinstance(value, list):
        return "[" + ", ".join(toml_value(v) for v in value) + "]"
    if isinstance(value, dict):
        pairs = (f"{_toml_key(str(k))} = {toml_value(v)}" for k, v in value.items())
        return "{" + ", ".join(pairs) + "}"
    return json.dumps(str(value))


def _toml_key(key: str) -> str:
    return key if _BARE_KEY.fullmatch(key) else json.dumps(key)


def _message(error: Any) -> str:
    if isinstance(error, dict):
        return str(error.get("message") or error)
    return str(error)

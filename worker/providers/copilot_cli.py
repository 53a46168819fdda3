"""GitHub Copilot CLI: `copilot -p … --output-format json` in the attempt's workspace.

The answer is the last assistant message of the JSONL event stream; the `result` event
carries the exit code and usage. With COPILOT_OFFLINE and COPILOT_PROVIDER_* variables
in the target's `env`, it runs against a model server of your own (BYOK), no login.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from evalrelay.bridge.results.trajectory import Trajectory
from evalrelay.bridge.targets.settings import CopilotCliTarget
from evalrelay.worker.agents.inputs import InputFile
from evalrelay.worker.agents.runner import AgentRun
from evalrelay.worker.agents.workspace import AttemptWorkspace
from evalrelay.worker.providers.agent_cli import CommandLineAgent
from evalrelay.worker.providers.base import ProviderOutput
from evalrelay.worker.providers.trajectory.copilot_cli import copilot_trajectory

MAX_PROMPT_ARGUMENT = 100_000
"""Longer tasks are not passed in `-p` (the kernel caps one argument at 128 KiB): the
prompt then asks Copilot to follow `task.md`."""


class CopilotCliProvider(CommandLineAgent):
    settings: CopilotCliTarget
    kind = "copilot"
    title = "Copilot CLI"
    home_variable = "COPILOT_HOME"
    usual_home = ".copilot"
    home_seeds = ("config.json",)
    vendor_variables = ("COPILOT_*", "GH_TOKEN", "GITHUB_TOKEN")

    def command(
        self, executable: str, workspace: AttemptWorkspace, inputs: list[InputFile]
    ) -> tuple[list[str], str | None]:
        settings = self.settings
        task = workspace.task
        if len(task.encode()) > MAX_PROMPT_ARGUMENT:
            task = f"Follow the instructions in {workspace.task_file.name} in this folder."
        argv = [executable, "-p", task, "--output-format", "json", "--disable-client-telemetry"]
        argv += ["--no-ask-user"]
        if settings.model:
            argv += ["--model", settings.model]
        if settings.allowed_tools is None:
            argv += ["--allow-all-tools"]
        for tool in settings.allowed_tools or []:
            argv += ["--allow-tool", tool]
        for tool in settings.denied_tools:
            argv += ["--deny-tool", tool]
        return [*argv, *settings.args], None

    def environment(self, home: Path | None) -> dict[str, str]:
        return {"COPILOT_AUTO_UPDATE": "false", **super().environment(home)}

    def transcript(self, events: list[dict[str, Any]], run: AgentRun) -> list[dict[str, Any]]:
        """Events that make the session's record; streaming deltas and the like are dropped."""
        return [e for e in events if not e.get("ephemeral")]

    def trajectory(self, events: list[dict[str, Any]]) -> Trajectory:
        return copilot_trajectory(events)

    def answer(
        self, run: AgentRun, events: list[dict[str, Any]], workspace: AttemptWorkspace
    ) -> ProviderOutput:
        result: dict[str, Any] = next(
            (e for e in reversed(events) if e.get("type") == "result"), {}
        )
        exit_code = result.get("exitCode", run.returncode)
        errors = [
            str(e.get("data", {}).get("message", e))
            for e in events
            if "error" in str(e.get("type", ""))
        ]
        if run.returncode != 0 or exit_code not in (0, None):
            why = f"exited with code {run.returncode}"
            raise self.failed(run, why + (f": {errors[-1]}" if errors else ""))
        messages = [
            str(e.get("data", {}).get("content") or "")
            for e in events
            if e.get("type") == "assistant.message"
        ]
        answers = [m for m in messages if m.strip()]
        if not answers:
            raise self.failed(
                run, "finished without an assistant message" + (f": {errors[-1]}" if errors else "")
            )
        usage = result.get("usage")
        return ProviderOutput(
            answer=answers[-1],
            model=self.settings.model,
            artifacts={self.kind: {"usage": usage}} if usage else {},
        )

"""Any command-line agent: a command template, run without a shell in a fresh workspace.

Placeholders are filled token by token after the command is split, so a path with
spaces stays one argument; a token that is exactly `{files}` becomes one argument per
attached file. Inside a shell's script (`bash -c '... > {output_file}'`) the paths are
filled in shell-quoted (the loader refuses any other placeholder there). The task also
arrives on standard input. The answer is `answer.md` (the task asks for `answer.tmp.md`,
renamed when complete), or else standard output.
"""

from __future__ import annotations

import logging
import os
import re
import shlex
import urllib.request
from pathlib import Path
from typing import Any, ClassVar

from evalrelay.bridge.contract.job import Job
from evalrelay.bridge.results.result import Status
from evalrelay.bridge.targets.cli_command import shell_scripts
from evalrelay.bridge.targets.settings import CliHealthcheck, CliTarget
from evalrelay.worker.agents.inputs import InputFile
from evalrelay.worker.agents.inside import NotInside, ReadText, read_inside
from evalrelay.worker.agents.runner import AgentRun, run_command
from evalrelay.worker.agents.workspace import AttemptWorkspace
from evalrelay.worker.providers.agent_cli import CommandLineAgent
from evalrelay.worker.providers.base import ProviderFailure, ProviderOutput
from evalrelay.worker.providers.failures import tail

log = logging.getLogger(__name__)

ANSWER_FILE = "answer.md"
_PLACEHOLDER = re.compile(r"\{([A-Za-z_]+)\}")
_ALIASES = {"prompt_file": "task_file"}


class CliProvider(CommandLineAgent):
    settings: CliTarget
    kind = "cli"
    title = "The agent command"
    answer_paths: ClassVar[dict[str, str]] = {"answer_tmp": "answer.tmp.md", "answer": ANSWER_FILE}

    def command(
        self, executable: str, workspace: AttemptWorkspace, inputs: list[InputFile]
    ) -> tuple[list[str], str | None]:
        tokens = self._tokens()
        values = {
            "task_file": str(workspace.task_file),
            "output_file": str(workspace.folder / ANSWER_FILE),
            "workspace": str(workspace.folder),
            "prompt": workspace.task,
        }
        # `files_format` is split like the command: `--file {path}` is two arguments.
        files = [
            token.format(
                path=str(workspace.folder / f.workspace_path),
                name=Path(f.workspace_path).name,
                relative=f.workspace_path,
            )
            for f in inputs
            for token in shlex.split(self.settings.files_format)
        ]
        argv = [executable]
        scripts = shell_scripts(tokens)
        for index, token in enumerate(tokens[1:], start=1):
            if token.lower() == "{files}":
                argv += files
            elif index in scripts:  # only evalrelay's own paths may stand there, quoted
                argv.append(_fill(token, {k: shlex.quote(v) for k, v in values.items()}))
            else:
                argv.append(_fill(token, {**values, "files": " ".join(files)}))
        if self.settings.verbose:
            log.info("target %s runs: %s", self.settings.name, shlex.join(argv))
        return argv, workspace.task

    def run(self, job: Job, deadline: float) -> ProviderOutput:
        check = self.settings.healthcheck
        if check is not None and check.model_dump_json() not in _healthy:
            failed = healthcheck_failure(check)
            if failed:
                raise ProviderFailure(
                    Status.INFRA_ERROR, f"target '{self.settings.name}': healthcheck {failed}"
                )
            _healthy.add(check.model_dump_json())
        return super().run(job, deadline)

    def answer(
        self, run: AgentRun, events: list[dict[str, Any]], workspace: AttemptWorkspace
    ) -> ProviderOutput:
        if run.returncode != 0:
            raise self.failed(run, f"exited with code {run.returncode}")
        try:
            written = read_inside(workspace.folder, ANSWER_FILE, self._answer_bytes())
        except FileNotFoundError:
            written = ReadText("", truncated=False)
        except (NotInside, OSError) as exc:
            return ProviderOutput(
                answer="",
                model_failure=f"the agent's answer was not read: {exc}",
                artifacts={self.kind: {"answer_from": ANSWER_FILE}},
            )
        from_file = bool(written.text)
        answer = written.text or run.stdout.strip()
        return ProviderOutput(
            answer=answer,
            model_failure=None if answer.strip() else "the agent wrote no answer",
            artifacts={
                self.kind: {
                    "answer_from": ANSWER_FILE if from_file else "stdout",
                    **({"answer_truncated_at": self._answer_bytes()} if written.truncated else {}),
                }
            },
        )

    def _answer_bytes(self) -> int:
        return self.settings.output_limit_bytes

    def _setting(self, name: str) -> Any:
        if name == "executable":
            return self._tokens()[0]
        return super()._setting(name)

    def _tokens(self) -> list[str]:
        command = self.settings.command
        return shlex.split(command) if isinstance(command, str) else list(command)


_healthy: set[str] = set()
"""The healthchecks (as JSON) that passed in this worker process."""


def healthcheck_failure(check: CliHealthcheck) -> str | None:
    """Why the check failed, or None when it passed. A command runs like the agents do,
    stopped at its time limit with everything it started."""
    if check.url is not None:
        try:
            with urllib.request.urlopen(check.url, timeout=check.timeout_seconds) as response:
                return None if 200 <= response.status < 300 else f"got HTTP {response.status}"
        except (OSError, ValueError) as exc:
            return f"could not GET {check.url}: {exc}"
    command = check.command or []
    argv = shlex.split(command) if isinstance(command, str) else list(command)
    cwd = Path(os.path.expanduser(check.cwd)) if check.cwd else Path.cwd()
    try:
        # The operator's own check of its own target: it may need the worker's variables.
        run = run_command(
            argv, cwd=cwd, seconds=check.timeout_seconds, stdin_text=None, env=dict(os.environ)
        )
    except OSError as exc:
        return f"could not run {shlex.join(argv)}: {exc}"
    if run.timed_out:
        return f"{shlex.join(argv)} did not finish within {check.timeout_seconds:.0f} s"
    if run.returncode != 0:
        return f"{shlex.join(argv)} exited with {run.returncode}: {tail(run.stderr, 300)}"
    return None


def _fill(token: str, values: dict[str, str]) -> str:
    def value(match: re.Match[str]) -> str:
        name = match.group(1).lower()
        name = _ALIASES.get(name, name)
        return values.get(name, match.group(0))

    return _PLACEHOLDER.sub(value, token)

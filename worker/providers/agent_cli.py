"""What the command-line agents (Codex, Copilot CLI, any `cli` command) have in common.

Every attempt gets a fresh workspace built from the kind's template, with the attached
files and `task.md`. The agent runs there in its own process group, stopped with all its
processes at the job's deadline. The workspace stays on the worker; the result keeps the
command line, the files, the transcript and standard error's tail.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any, ClassVar

from evalrelay.bridge.contract.job import Job
from evalrelay.bridge.results.result import Status
from evalrelay.bridge.results.trajectory import Trajectory
from evalrelay.worker.agents.changes import Snapshot
from evalrelay.worker.agents.environment import agent_environment
from evalrelay.worker.agents.homes import agent_home
from evalrelay.worker.agents.inputs import InputFile, fetch_inputs
from evalrelay.worker.agents.runner import OUTPUT_BYTES, AgentRun, run_agent
from evalrelay.worker.agents.sandbox import Confined, SandboxUnavailable, install_root, sandboxed
from evalrelay.worker.agents.task import render_task
from evalrelay.worker.agents.templates import TemplateError, WorkspaceTemplate
from evalrelay.worker.agents.workspace import AttemptWorkspace
from evalrelay.worker.providers.base import Provider, ProviderFailure, ProviderOutput, provider_for
from evalrelay.worker.providers.commands import find_executable
from evalrelay.worker.providers.failures import STDERR_CHARS, tail

TRANSCRIPT_FILE = "transcript.jsonl"
WORKER_FILES = frozenset({TRANSCRIPT_FILE, "transcript.stderr.txt"})
"""Files the worker writes into the workspace itself: never the agent's changes."""


class CommandLineAgent(Provider):
    kind: ClassVar[str]
    """The template folder, and the key of this agent's record in the result's artifacts."""
    title: ClassVar[str]
    answer_paths: ClassVar[dict[str, str]] = {}
    """Task placeholders naming files in the workspace, e.g. where to write the answer."""
    home_variable: ClassVar[str | None] = None
    """The agent's home folder variable (CODEX_HOME): each running job gets its own."""
    usual_home: ClassVar[str] = ""
    """That home's usual place under the user's home, seeding the job's copy."""
    home_seeds: ClassVar[tuple[str, ...]] = ()
    """The configuration and credential files copied from the usual home."""
    vendor_variables: ClassVar[tuple[str, ...]] = ()
    """The worker's variables this agent's CLI reads for its model and key, passed through
    (a name, or a `PREFIX_*`); nothing else of the worker's reaches it
    (`worker.agents.environment`) unless the target's `inherit_env` names it."""

    def run(self, job: Job, deadline: float) -> ProviderOutput:
        try:
            template = WorkspaceTemplate.load(self.kind, self._setting("workspace_template"))
        except TemplateError as exc:
            raise ProviderFailure(Status.INFRA_ERROR, str(exc)) from None
        executable = find_executable(self._setting("executable"), self.title)
        inputs = fetch_inputs(self.redis, job)
        workspace = AttemptWorkspace.create(job, template, inputs, **self.answer_paths)
        given = Snapshot(workspace.folder, WORKER_FILES)
        with self.home() as home:
            argv, stdin_text = self.command(executable, workspace, inputs)
            env = agent_environment(
                self.vendor_variables, self.environment(home), self._setting("inherit_env") or ()
            )
            with self.runtime(argv, env, executable, workspace, home) as confined:
                run = run_agent(
                    confined.argv,
                    cwd=self.cwd(workspace),
                    env=confined.env,
                    stdin_text=stdin_text,
                    deadline=deadline,
                    stdout_file=workspace.folder / TRANSCRIPT_FILE,
                    fatal=self.fatal_error,
                    limits=confined.limits,
                    output_bytes=self._setting("output_limit_bytes") or OUTPUT_BYTES,
                )
                over_limit = run.over_limit or confined.verdict()
        events = json_events(run.stdout)
        trajectory = self.trajectory(events)
        changes = given.changes()
        record = {
            **workspace.record(),
            "command": argv,
            "exit_code": run.returncode,
            "duration_ms": run.duration_ms,
            "transcript": self.transcript(events, run),
            **({"stdout_truncated": True} if run.stdout_truncated else {}),
            **({"home": str(home)} if home else {}),
        }
        self.keep_log(job, workspace, record)
        try:
            if over_limit is not None:
                raise ProviderFailure(
                    Status.INFRA_ERROR,
                    f"{self.title} {over_limit} and was stopped with all its processes; "
                    "raise the limit in the target's isolation if the task needs more",
                    kind="resource_limit",
                )
            if run.stopped_because is not None:
                raise self.failed(run, run.stopped_because)
            if run.timed_out:
                raise ProviderFailure(
                    Status.TIMEOUT,
                    f"{self.title} did not finish within {job.timeout_seconds:.0f} s; "
                    f"it was stopped with all its processes",
                )
            output = self.answer(run, events, workspace)
        except ProviderFailure as failure:
            failure.artifacts[self.kind] = {**record, "stderr": tail(run.stderr, STDERR_CHARS)}
            failure.trajectory, failure.workspace_changes = trajectory, changes
            raise
        output.artifacts[self.kind] = {**record, **output.artifacts.get(self.kind, {})}
        if trajectory is not None:
            output.trajectory = trajectory
            output.tool_calls = output.tool_calls or trajectory.tool_calls()
        output.workspace_changes = changes
        output.workspace = str(workspace.folder)
        return output

    def task_preview(self, question: str, inputs: list[InputFile]) -> str:
        """The task.md an attempt would hold, its workspace written `<workspace>`."""
        template = WorkspaceTemplate.load(self.kind, self._setting("workspace_template"))
        return render_task(
            template.task,
            request_id="<request id>",
            question=question,
            inputs=inputs,
            **{name: f"<workspace>/{path}" for name, path in self.answer_paths.items()},
        )

    def trajectory(self, events: list[dict[str, Any]]) -> Trajectory | None:
        """The agent's steps read from its event stream; None when it reports none."""
        return None

    def command(
        self, executable: str, workspace: AttemptWorkspace, inputs: list[InputFile]
    ) -> tuple[list[str], str | None]:
        """The argument list, and the text for standard input (None: no input at all)."""
        raise NotImplementedError

    def answer(
        self, run: AgentRun, events: list[dict[str, Any]], workspace: AttemptWorkspace
    ) -> ProviderOutput:
        raise NotImplementedError

    @contextlib.contextmanager
    def runtime(
        self,
        argv: list[str],
        env: dict[str, str],
        executable: str,
        workspace: AttemptWorkspace,
        home: Path | None,
    ) -> Iterator[Confined]:
        """The command line and environment the agent runs with: as they are (`runtime:
        host`), or wrapped in a sandbox whose only writable folders are the workspace and
        the agent's home (`runtime: sandbox`)."""
        if self._setting("runtime") != "sandbox":
            yield Confined(argv, env)
            return
        try:
            with sandboxed(
                argv,
                cwd=self.cwd(workspace),
                env=env,
                writable=[workspace.folder, *([home] if home else [])],
                readable=[install_root(Path(executable).resolve())],
                isolation=self._setting("isolation"),
            ) as wrapped:
                yield wrapped
        except SandboxUnavailable as exc:
            raise ProviderFailure(Status.INFRA_ERROR, str(exc)) from None

    def fatal_error(self, line: str) -> str | None:
        """Why a line of the agent's output means it cannot succeed: the agent is then
        stopped at once instead of at its deadline. None for most lines."""
        return None

    def environment(self, home: Path | None) -> dict[str, str]:
        env: dict[str, str] = dict(self._setting("env") or {})
        if self.home_variable and home:
            env[self.home_variable] = str(home)
        return env

    @contextlib.contextmanager
    def home(self) -> Iterator[Path | None]:
        if self.home_variable is None:
            yield None
            return
        usual = Path(os.environ.get(self.home_variable) or Path.home() / self.usual_home)
        with agent_home(self.kind, usual, self.home_seeds) as home:
            yield home

    def cwd(self, workspace: AttemptWorkspace) -> Path:
        """The workspace, or the target's `cwd` (relative to the workspace, `~` and `$VAR`
        expanded)."""
        cwd = self._setting("cwd")
        if cwd:
            return workspace.folder / Path(os.path.expandvars(cwd)).expanduser()
        return workspace.folder

    def keep_log(self, job: Job, workspace: AttemptWorkspace, record: dict[str, Any]) -> None:
        """With `log_dir`, a copy of the agent's output stream (`log_format: json`) or of
        the transcript the result keeps (`summary`, the default) outlives the workspace."""
        log_dir = self._setting("log_dir")
        if not log_dir:
            return
        folder = Path(os.path.expandvars(log_dir)).expanduser()
        folder.mkdir(parents=True, exist_ok=True)
        name = f"{job.case_id}-{job.job_id[:8]}-{job.attempt}"
        if self._setting("log_format") == "json":
            shutil.copyfile(workspace.folder / TRANSCRIPT_FILE, folder / f"{name}.jsonl")
        else:
            text = json.dumps(record.get("transcript"), indent=2, ensure_ascii=False)
            (folder / f"{name}.json").write_text(text + "\n", encoding="utf-8")

    def transcript(self, events: list[dict[str, Any]], run: AgentRun) -> list[dict[str, Any]]:
        return events

    def failed(self, run: AgentRun, why: str) -> ProviderFailure:
        """An `infra_error` carrying the agent's message and standard error's tail."""
        stderr = tail(run.stderr, 800)
        return ProviderFailure(
            Status.INFRA_ERROR, f"{self.title} {why}" + (f"; stderr: {stderr}" if stderr else "")
        )

    def _setting(self, name: str) -> Any:
        return getattr(self.settings, name, None)


def json_events(stdout: str) -> list[dict[str, Any]]:
    """The JSON objects of a JSONL stream; other lines (warnings, progress) are skipped."""
    events = []
    for line in stdout.splitlines():
        line = line.strip()
        if line.startswith("{"):
            with contextlib.suppress(json.JSONDecodeError):
                event = json.loads(line)
                if isinstance(event, dict):
                    events.append(event)
    return events


def task_preview(settings: Any, question: str, inputs: list[InputFile]) -> str | None:
    """The task.md a command-line agent target would read for this question and these
    files (`evalrelay render --target`), its workspace shown as `<workspace>`; None for
    targets that are not such agents."""
    try:
        provider = provider_for(settings)
    except ProviderFailure:
        return None
    return (
        provider.task_preview(question, inputs) if isinstance(provider, CommandLineAgent) else None
    )

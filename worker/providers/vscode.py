"""VS Code's Copilot chat through a workspace pool: a request file in, an answer file out.

VS Code has no API for chat. A job claims a workspace of the pool, writes its attached
files and `messages/<request_id>_req.md` there, brings the workspace's window to the
front, and runs `code -r chat …` naming the request file. The agent writes
`<request_id>_res.tmp.md` and renames it to `<request_id>_res.md`: that file appearing,
non-empty, is the answer. The request id is new for every attempt, so a late answer to
an earlier attempt is never read. `-r` sends the chat to the last active window, so the
focus-then-chat pair runs under one lock per host and executable.
"""

from __future__ import annotations

import logging
import os
import random
import tempfile
import time
import uuid
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import filelock

from evalrelay.bridge.contract.job import Job
from evalrelay.bridge.results.result import Status
from evalrelay.bridge.targets.settings import VSCodeTarget
from evalrelay.worker.agents.changes import Snapshot
from evalrelay.worker.agents.inputs import InputFile, fetch_inputs, write_inputs
from evalrelay.worker.agents.inside import NotInside, read_inside
from evalrelay.worker.agents.task import render_task, strip_echo
from evalrelay.worker.agents.templates import TemplateError, WorkspaceTemplate
from evalrelay.worker.agents.vscode_pool import (
    ALIVE_FILE,
    LOCK_FILE,
    MESSAGES_FOLDER,
    Claim,
    WorkspacePool,
    pool_root,
)
from evalrelay.worker.providers.base import NoCapacity, Provider, ProviderFailure, ProviderOutput
from evalrelay.worker.providers.commands import find_executable, run_command

log = logging.getLogger(__name__)

POOL_FILES = frozenset({MESSAGES_FOLDER, ALIVE_FILE, LOCK_FILE})
"""What the pool and the request protocol write in a workspace: not the agent's changes.
A pool workspace is not rebuilt between jobs, so its changes are those since this job's
request was written. Its workspace is not graded in place: the next job may hold it."""

WAKEUP_MODE = "wakeup"
POLL_SECONDS = 0.05
"""How often the answer file (and `.alive`) is looked for: a stat call, cheap."""
COMMAND_TIMEOUT_SECONDS = 30.0
BUSY_RETRY_SECONDS = (1.0, 3.0)
"""A job that finds every workspace busy is queued again after a random pause in this range."""


class VSCodeProvider(Provider):
    settings: VSCodeTarget

    def run(self, job: Job, deadline: float) -> ProviderOutput:
        settings = self.settings
        executable = find_executable(
            settings.executable or settings.default_executable(), "VS Code's command line"
        )
        try:
            template = WorkspaceTemplate.load("vscode", settings.workspace_template)
        except TemplateError as exc:
            raise ProviderFailure(Status.INFRA_ERROR, str(exc)) from None
        inputs = fetch_inputs(self.redis, job)
        pool = WorkspacePool(pool_root(settings), self.redis)
        if not pool.workspaces():
            log.info("no VS Code workspaces in %s yet: provisioning one", pool.root)
            pool.provision(1, template)
        request_id = new_request_id()
        claim = pool.claim(job.job_id, request_id)
        if claim is None:
            raise NoCapacity(
                f"all {len(pool.workspaces())} VS Code workspaces in {pool.root} are busy",
                random.uniform(*BUSY_RETRY_SECONDS),
            )
        with claim.held():
            chat = Chat(executable, settings, claim, request_id)
            try:
                return chat.run(job, template, inputs, deadline)
            except ProviderFailure as failure:
                failure.artifacts["vscode"] = chat.record()
                raise


def new_request_id() -> str:
    """Sortable by time, unique per attempt: `20261121T235801-1a2b3c4d`."""
    return f"{datetime.now(UTC):%Y%m%dT%H%M%S}-{uuid.uuid4().hex[:8]}"


ANSWER_BYTES = 1_000_000
"""The most of an answer file kept."""


class Chat:
    """One request through one claimed workspace, and what it leaves for the result."""

    def __init__(
        self, executable: str, settings: VSCodeTarget, claim: Claim, request_id: str
    ) -> None:
        self.executable = executable
        self.settings = settings
        self.claim = claim
        self.workspace = claim.workspace
        self.request_id = request_id
        messages = self.workspace.messages
        self.request_file = messages / f"{request_id}_req.md"
        self.answer_tmp = messages / f"{request_id}_res.tmp.md"
        self.answer_file = messages / f"{request_id}_res.md"
        self.request_text = ""
        self.command: list[str] = []
        self.woke = False
        self.clock = time.monotonic()
        self.timings_ms: dict[str, int] = {}

    def run(
        self, job: Job, template: WorkspaceTemplate, inputs: list[InputFile], deadline: float
    ) -> ProviderOutput:
        self._prepare(job, template, inputs)
        given = Snapshot(self.workspace.folder, POOL_FILES)
        self._lap("prepared")
        attachments = [self.workspace.folder / f.workspace_path for f in inputs]
        if not self.workspace.alive_file.exists():
            self._wake(deadline)
            self._lap("ready")
        self.command = [
            self.executable,
            "-r",
            "chat",
            "-m",
            self.settings.mode,
            *[arg for path in [*attachments, self.request_file] for arg in ("-a", str(path))],
            f"Follow instructions in {self.request_file.name}",
        ]
        self._focused(self.command, deadline)
        self._lap("dispatched")
        answer, echoed = strip_echo(self._wait_for_answer(deadline), self.request_id)
        self._lap("answered")
        record = {**self.record(), "echoed_request_id": echoed}
        failure = None if answer.strip() else "the agent's answer file holds no answer"
        return ProviderOutput(
            answer=answer,
            model_failure=failure,
            artifacts={"vscode": record},
            workspace_changes=given.changes(),
        )

    def record(self) -> dict[str, Any]:
        reclaimed = self.claim.reclaimed_from
        return {
            "workspace": self.workspace.name,
            "folder": str(self.workspace.folder),
            "request_id": self.request_id,
            "request_file": str(self.request_file),
            "request": self.request_text,
            "answer_file": str(self.answer_file),
            "command": self.command,
            "woke_window": self.woke,
            "reclaimed_from": reclaimed.model_dump(mode="json") if reclaimed else None,
            "claimed_at": self.claim.owner.claimed_at.isoformat(),
            "released_at": datetime.now(UTC).isoformat(),
            "timings_ms": self.timings_ms,
        }

    def _prepare(self, job: Job, template: WorkspaceTemplate, inputs: list[InputFile]) -> None:
        self.workspace.install(template)
        for old in self.workspace.messages.iterdir():
            if old.is_file():
                old.unlink(missing_ok=True)  # earlier requests; their results kept them
        write_inputs(self.workspace.folder, inputs)
        self.request_text = render_task(
            template.task,
            request_id=self.request_id,
            question=job.request.question,
            inputs=inputs,
            answer_tmp=str(self.answer_tmp),
            answer=str(self.answer_file),
        )
        self.request_file.write_text(self.request_text, encoding="utf-8")

    def _wake(self, deadline: float) -> None:
        """Open the window and wait until its agent answers the wake-up chat."""
        self.woke = True
        alive = self.workspace.alive_file
        alive.unlink(missing_ok=True)
        prompt = f"create a file named {ALIVE_FILE} in the {self.workspace.name} folder"
        self._focused([self.executable, "-r", "chat", "-m", WAKEUP_MODE, prompt], deadline)
        ready_by = min(deadline, time.monotonic() + self.settings.ready_timeout_seconds)
        while not alive.exists():
            if time.monotonic() >= ready_by:
                Provider.remaining(deadline)
                raise ProviderFailure(
                    Status.INFRA_ERROR,
                    f"VS Code did not answer the wake-up chat in {self.workspace.name} within "
                    f"{self.settings.ready_timeout_seconds:.0f} s (no {ALIVE_FILE}); check that "
                    f"it runs on this host with Copilot chat signed in",
                    retryable=True,
                )
            time.sleep(POLL_SECONDS)

    def _focused(self, chat: list[str], deadline: float) -> None:
        """Bring the workspace's window to the front and chat in it, holding the host lock."""
        with dispatch_lock(self.executable, Provider.remaining(deadline)):
            self._code([self.executable, str(self.workspace.workspace_file)], deadline)
            time.sleep(self.settings.focus_delay_seconds)
            self._code(chat, deadline)

    def _code(self, argv: list[str], deadline: float) -> None:
        run_command(argv, timeout=min(COMMAND_TIMEOUT_SECONDS, Provider.remaining(deadline)))

    def _wait_for_answer(self, deadline: float) -> str:
        while True:
            if self.claim.lost.is_set():
                raise ProviderFailure(
                    Status.INFRA_ERROR,
                    f"the claim on {self.workspace.name} was lost while the agent worked",
                )
            answer = _read_if_complete(self.workspace.folder, self.answer_file)
            if answer is not None:
                return answer
            if time.monotonic() >= deadline:
                # The window may be stuck on this request: probe it again before the next.
                self.workspace.alive_file.unlink(missing_ok=True)
                raise ProviderFailure(Status.TIMEOUT, self._no_answer())
            time.sleep(POLL_SECONDS)

    def _no_answer(self) -> str:
        waited = time.monotonic() - self.clock
        if self.answer_tmp.exists():
            why = f"{self.answer_tmp.name} was written but never renamed"
        else:
            why = f"no {self.answer_file.name} appeared"
        return f"no answer from VS Code in {self.workspace.name} after {waited:.0f} s: {why}"

    def _lap(self, name: str) -> None:
        self.timings_ms[name] = int((time.monotonic() - self.clock) * 1000)


def dispatch_lock(executable: str, timeout: float) -> filelock.FileLock:
    """One lock per user and VS Code executable on this host, across worker processes."""
    name = f"evalrelay-{os.getuid()}-{Path(executable).name}-dispatch.lock"
    return filelock.FileLock(str(Path(tempfile.gettempdir()) / name), timeout=timeout)


def _read_if_complete(folder: Path, path: Path) -> str | None:
    """The file's text once it exists and is non-empty; a read that fails is tried again.
    A link on the way (the workspace is reused, and an agent may have planted one) is
    never followed: the answer is then not there."""
    try:
        read = read_inside(folder, path.relative_to(folder).as_posix(), ANSWER_BYTES)
    except (NotInside, OSError):
        return None
    return read.text or None

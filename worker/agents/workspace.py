"""A fresh workspace for every attempt of a command-line agent, kept for the result.

`$EVALRELAY_HOME/workspaces/<campaign>/<job>-a<attempt>-<request id>/` holds the
template's files, the attached files under `inputs/`, the rendered `task.md` and the
agent's transcript. It stays on the worker after the job, so what the agent did can be
inspected; the result lists its files.
"""

from __future__ import annotations

import uuid
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from evalrelay.bridge.contract.job import Job
from evalrelay.bridge.queue.embedded import evalrelay_home
from evalrelay.worker.agents.inputs import InputFile, write_inputs
from evalrelay.worker.agents.task import render_task
from evalrelay.worker.agents.templates import TASK_FILE, WorkspaceTemplate

LISTED_FILES = 200
"""At most this many of the workspace's files are listed in the result."""
TASK_CHARS = 64_000
"""The task file the agent read, kept in the result up to this many characters."""


class AttemptWorkspace:
    def __init__(self, folder: Path, request_id: str) -> None:
        self.folder = folder
        self.request_id = request_id

    @classmethod
    def create(
        cls,
        job: Job,
        template: WorkspaceTemplate,
        inputs: list[InputFile],
        **paths: str,
    ) -> AttemptWorkspace:
        request_id = f"{datetime.now(UTC):%Y%m%dT%H%M%S}-{uuid.uuid4().hex[:8]}"
        folder = (
            evalrelay_home()
            / "workspaces"
            / job.campaign_id
            / f"{job.job_id[:12]}-a{job.attempt}-{request_id}"
        )
        folder.mkdir(parents=True)
        template.install(folder)
        write_inputs(folder, inputs)
        workspace = cls(folder, request_id)
        workspace.task_file.write_text(
            render_task(
                template.task,
                request_id=request_id,
                question=job.request.question,
                inputs=inputs,
                **{name: str(folder / path) for name, path in paths.items()},
            ),
            encoding="utf-8",
        )
        return workspace

    @property
    def task_file(self) -> Path:
        return self.folder / TASK_FILE

    @property
    def task(self) -> str:
        return self.task_file.read_text(encoding="utf-8")

    def record(self) -> dict[str, Any]:
        files = sorted(
            p.relative_to(self.folder).as_posix() for p in self.folder.rglob("*") if p.is_file()
        )
        return {
            "workspace": str(self.folder),
            "request_id": self.request_id,
            "task": self.task[:TASK_CHARS],
            "files": files[:LISTED_FILES],
            "files_not_listed": max(0, len(files) - LISTED_FILES),
        }

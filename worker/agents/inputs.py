"""The job's attached files, written into an agent's workspace from Redis.

Files are placed under `inputs/` at their path inside the project, so names with spaces
or non-ASCII characters keep their meaning and the worker needs nothing from the
submitting machine's disk.
"""

from __future__ import annotations

import shutil
from pathlib import Path, PurePosixPath

import redis
from pydantic import BaseModel, ConfigDict

from bridge.queue.blobs import fetch_blob
from bridge.queue.jobs import Job

INPUTS_FOLDER = "inputs"


class InputFile(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    display_path: str
    workspace_path: str
    """The file's path relative to the workspace, with `/`."""
    is_guideline: bool
    text: str


def fetch_inputs(client: redis.Redis | None, job: Job) -> list[InputFile]:
    """Every attached file of the job with its text; read before a workspace is claimed."""
    if job.files and client is None:
        raise RuntimeError("attached files need the worker's Redis connection")
    inputs: list[InputFile] = []
    for file in job.files:
        relative = PurePosixPath(file.project_path)
        if relative.is_absolute() or ".." in relative.parts:
            raise ValueError(f"attached file path {file.project_path!r} leaves the project")
        assert client is not None
        inputs.append(
            InputFile(
                display_path=file.display_path,
                workspace_path=(PurePosixPath(INPUTS_FOLDER) / relative).as_posix(),
                is_guideline=file.is_guideline,
                text=fetch_blob(client, file.sha256),
            )
        )
    return inputs


def write_inputs(workspace: Path, inputs: list[InputFile]) -> list[Path]:
    """Replace the workspace's `inputs/` with these files; their absolute paths, in order."""
    shutil.rmtree(workspace / INPUTS_FOLDER, ignore_errors=True)
    paths = []
    for item in inputs:
        path = workspace / item.workspace_path
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(item.text, encoding="utf-8")
        paths.append(path)
    return paths

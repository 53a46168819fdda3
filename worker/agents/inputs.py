"""The job's attached files, written into an agent's workspace from Redis.

Files are placed under `inputs/` at their path inside the project, so names with spaces
or non-ASCII characters keep their meaning and the worker needs nothing from the
submitting machine's disk.
"""

from __future__ import annotations

import os
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
    """Replace the workspace's `inputs/` with these files; their absolute paths, in order.
    A reused workspace's `inputs` may be a link an earlier agent planted: it is removed,
    not followed, and each file is created new (`O_EXCL | O_NOFOLLOW`)."""
    folder = workspace / INPUTS_FOLDER
    if folder.is_symlink() or folder.is_file():
        folder.unlink()
    shutil.rmtree(folder, ignore_errors=True)
    paths = []
    for item in inputs:
        path = workspace / item.workspace_path
        path.parent.mkdir(parents=True, exist_ok=True)
        if not path.parent.resolve().is_relative_to(folder.resolve()):
            raise OSError(f"{item.workspace_path}: its folder is a link out of the workspace")
        flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW
        with os.fdopen(os.open(path, flags, 0o644), "w", encoding="utf-8") as handle:
            handle.write(item.text)
        paths.append(path)
    return paths

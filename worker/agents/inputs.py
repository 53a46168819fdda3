"""The job's attached files, written into an agent's workspace from Redis.

Files are placed under `inputs/` at the path the eval file names them by (the label the
prompt shows them under), so names with spaces or non-ASCII characters keep their meaning
and the worker needs nothing from the submitting machine's disk.
"""

from __future__ import annotations

import os
import posixpath
import shutil
from collections.abc import Callable, Iterable
from pathlib import Path, PurePosixPath

import redis
from pydantic import BaseModel, ConfigDict

from evalrelay.bridge.contract.job import AttachedFile, Job
from evalrelay.bridge.queue.blobs import fetch_blob

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
    if not job.files:
        return []
    if client is None:
        raise RuntimeError("attached files need the worker's Redis connection")
    connection = client
    return placed(job.files, lambda file: fetch_blob(connection, file.sha256))


def placed(files: Iterable[AttachedFile], text: Callable[[AttachedFile], str]) -> list[InputFile]:
    """The files with their place in the workspace (`labelled`) and their text."""
    inputs: list[InputFile] = []
    taken: set[str] = set()
    for file in files:
        relative = PurePosixPath(file.project_path)
        if relative.is_absolute() or ".." in relative.parts:
            raise ValueError(f"attached file path {file.project_path!r} leaves the project")
        where = (PurePosixPath(INPUTS_FOLDER) / labelled(file.display_path, relative)).as_posix()
        if where in taken:  # two files written alike: the second at its project path
            where = (PurePosixPath(INPUTS_FOLDER) / relative).as_posix()
        taken.add(where)
        inputs.append(
            InputFile(
                display_path=file.display_path,
                workspace_path=where,
                is_guideline=file.is_guideline,
                text=text(file),
            )
        )
    return inputs


def labelled(display_path: str, project_path: PurePosixPath) -> PurePosixPath:
    """Where under `inputs/` a file goes: at its path as the eval file wrote it, the label
    the prompt shows it under (`=== ./src/x.py ===` is `inputs/src/x.py`), so a command
    the case names (`cd inputs/src`) finds it; a path that climbs out (`../x.py`) or is
    empty goes at its path in the project instead."""
    written = PurePosixPath(posixpath.normpath(display_path.replace("\\", "/").lstrip("/")))
    if ".." in written.parts or written.is_absolute() or str(written) in ("", "."):
        return project_path
    return written


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

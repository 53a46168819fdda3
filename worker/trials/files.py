"""A task's files on the worker: their bytes from Redis by hash, written to a folder or
packed as a tar stream for a container, at paths checked to stay where they belong."""

from __future__ import annotations

import io
import tarfile
from pathlib import Path, PurePosixPath

import redis

from evalrelay.bridge.evalfile.harbor.folder import TaskFile, TaskSpec
from evalrelay.bridge.queue.blobs import fetch_many


def fetch_contents(client: redis.Redis, spec: TaskSpec) -> dict[str, bytes]:
    """Every file of the task by its hash, read from Redis in one round trip."""
    hashes = sorted({f.sha256 for f in spec.files})
    return dict(zip(hashes, fetch_many(client, hashes), strict=True))


def relative(path: str, strip: str = "") -> PurePosixPath:
    """`path` less `strip`, refused when it would leave its folder."""
    inner = PurePosixPath(path.removeprefix(strip))
    if inner.is_absolute() or ".." in inner.parts or not inner.parts:
        raise ValueError(f"task file path {path!r} leaves its folder")
    return inner


def write_files(
    folder: Path, files: list[TaskFile], contents: dict[str, bytes], strip: str = ""
) -> None:
    for file in files:
        target = folder / relative(file.path, strip)
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(contents[file.sha256])
        target.chmod(0o755 if file.executable else 0o644)


def tar_of(files: list[TaskFile], contents: dict[str, bytes], strip: str, into: str = "") -> bytes:
    """A tar stream of `files` (less the `strip` prefix), under `into/` when given: what
    `docker cp -` unpacks in a container, owned by root, modes kept."""
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w") as tar:
        folders: set[PurePosixPath] = set()
        for file in files:
            inner = relative(file.path, strip)
            inner = PurePosixPath(into) / inner if into else inner
            for parent in reversed(inner.parents):
                if parent != PurePosixPath(".") and parent not in folders:
                    folders.add(parent)
                    tar.addfile(_entry(parent.as_posix(), 0, tarfile.DIRTYPE, 0o755))
            data = contents[file.sha256]
            mode = 0o755 if file.executable else 0o644
            entry = _entry(inner.as_posix(), len(data), tarfile.REGTYPE, mode)
            tar.addfile(entry, io.BytesIO(data))
    return buffer.getvalue()


def _entry(name: str, size: int, kind: bytes, mode: int) -> tarfile.TarInfo:
    info = tarfile.TarInfo(name)
    info.size, info.type, info.mode = size, kind, mode
    return info

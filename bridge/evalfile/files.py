"""Resolving the `file` segments of eval files to text, safely.

A path resolves against the eval file's folder, then each parent up to the project root;
a leading `/` starts at the project root. Whatever the path says, the file it reaches
(symlinks followed) must lie inside the project root, be text, and be small enough:
a job carries its files' contents to workers anywhere, so what cannot be read here
must not be sent.
"""

from __future__ import annotations

import hashlib
import os
import stat
from pathlib import Path

from evalrelay.bridge.evalfile.project import Project
from evalrelay.bridge.evalfile.resolved import ResolvedFile

BINARY_SNIFF_BYTES = 8192
"""A NUL byte in this many leading bytes marks a file as binary."""


class FileRefError(Exception):
    """Raised when a `file` segment cannot be used; the message says what to do."""


def search_roots(eval_dir: Path, project_root: Path) -> list[Path]:
    """The eval file's folder, then each parent up to and including the project root."""
    roots = [eval_dir]
    for parent in eval_dir.parents:
        if not parent.is_relative_to(project_root):
            break
        roots.append(parent)
    return roots


def resolve_file(value: str, eval_file: Path, project: Project) -> ResolvedFile:
    try:
        return _resolve(value, eval_file, project)
    except OSError as exc:  # a name too long, a loop of links, a folder we may not read
        raise FileRefError(f"cannot use file '{value}': {exc.strerror}; fix the path") from None


def _resolve(value: str, eval_file: Path, project: Project) -> ResolvedFile:
    rooted = value.startswith(("/", "\\"))
    relative = value.lstrip("/\\").replace("\\", "/")
    eval_dir = eval_file.resolve().parent
    roots = [project.root] if rooted else search_roots(eval_dir, project.files_root)
    tried = []
    for root in roots:
        candidate = Path(os.path.normpath(root / relative))
        tried.append(candidate)
        if candidate.exists() or candidate.is_symlink():
            return _read(value, candidate, project)
    where = ", ".join(_shown(p, project.root) for p in tried)
    raise FileRefError(
        f"file '{value}' not found (looked for {where}); "
        "create it or fix the path (a leading '/' means the project root)"
    )


def _read(value: str, candidate: Path, project: Project) -> ResolvedFile:
    real = candidate.resolve()
    inside = project.files_root
    if not candidate.is_relative_to(inside) or not real.is_relative_to(inside):
        if project.untrusted:
            raise FileRefError(project.outside(f"file '{value}'", real))
        raise FileRefError(
            f"file '{value}' resolves to {real}, outside the project root "
            f"{project.root}; attached files must live inside the project"
        )
    if not real.exists():
        raise FileRefError(f"file '{value}' is a broken symlink; fix or remove the link")
    if real.is_dir():
        raise FileRefError(f"'{value}' is a folder, not a file; name a file inside it")
    data = _read_inside(value, real, project)
    if b"\0" in data[:BINARY_SNIFF_BYTES]:
        raise FileRefError(f"file '{value}' is binary; only text files can be attached")
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        raise FileRefError(f"file '{value}' is not UTF-8 text; save it as UTF-8") from None
    text = normalise_text(text)
    project_path = candidate.relative_to(project.root).as_posix()
    return ResolvedFile(
        value, project_path, text, content_hash(text), project.is_guideline(project_path)
    )


def _read_inside(value: str, real: Path, project: Project) -> bytes:
    """The file's bytes, checked on the file actually opened: a folder swapped for a link
    between the checks above and this read cannot make us read outside the project."""
    fd = os.open(real, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    with os.fdopen(fd, "rb") as handle:
        opened = os.fstat(fd)
        where = _opened_path(fd)
        if (where is not None and not where.is_relative_to(project.files_root)) or (
            where is None and not os.path.samestat(opened, os.stat(real))
        ):
            raise FileRefError(
                f"file '{value}' changed into a link outside the project root while it was "
                "read; attached files must live inside the project"
            )
        if not stat.S_ISREG(opened.st_mode):
            raise FileRefError(f"'{value}' is not a regular file; attach a plain text file")
        limit = project.config.max_file_bytes
        if opened.st_size > limit:
            raise FileRefError(
                f"file '{value}' is {opened.st_size} bytes, over the {limit}-byte limit; "
                "attach a smaller file or raise max_file_bytes in evalrelay.yaml"
            )
        return handle.read(limit + 1)


def _opened_path(fd: int) -> Path | None:
    """Where an open file really is, from the kernel (Linux); None where it cannot say."""
    try:
        return Path(os.readlink(f"/proc/self/fd/{fd}"))
    except OSError:
        return None


def normalise_text(text: str) -> str:
    """CRLF to LF, and a single trailing newline removed (spec §1)."""
    text = text.replace("\r\n", "\n")
    return text[:-1] if text.endswith("\n") else text


def content_hash(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def _shown(path: Path, root: Path) -> str:
    return path.relative_to(root).as_posix() if path.is_relative_to(root) else str(path)

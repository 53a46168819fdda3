"""Reading what an agent left in its workspace without following a link out of it.

The agent under evaluation is untrusted, and the worker reads its files outside any
sandbox: an `answer.md` linked to `~/.ssh/id_ed25519`, another campaign's results or a
Redis configuration would put that file in the result, and a `file_contains` on a link
would tell whether any host file holds a text. So each file is opened one folder at a
time from the workspace, with `O_NOFOLLOW` at every step: a symbolic link anywhere on the
way, or a file with other hard links (one made to a file outside), is refused.
"""

from __future__ import annotations

import errno
import os
import stat
from pathlib import Path, PurePosixPath
from typing import NamedTuple


class NotInside(Exception):
    """The path leaves the workspace (a link, `..`, another hard link); the message says how."""


class ReadText(NamedTuple):
    text: str
    truncated: bool
    """The file was longer than the limit: `text` is its beginning."""


def open_inside(root: Path, relative: str | PurePosixPath) -> int:
    """A read-only descriptor of the regular file at `relative` under `root`; NotInside
    when the way there holds a link, FileNotFoundError when no regular file is there."""
    parts = PurePosixPath(relative).parts
    if not parts or parts[0] == "/" or ".." in parts:
        raise NotInside(f"{relative} is not a path inside the workspace")
    folder = os.open(root, os.O_RDONLY | os.O_DIRECTORY)
    try:
        for part in parts[:-1]:
            inner = _open_step(part, os.O_RDONLY | os.O_DIRECTORY, folder, relative)
            os.close(folder)
            folder = inner
        fd = _open_step(parts[-1], os.O_RDONLY | os.O_NONBLOCK, folder, relative)
    finally:
        os.close(folder)
    opened = os.fstat(fd)
    if not stat.S_ISREG(opened.st_mode):
        os.close(fd)
        raise FileNotFoundError(errno.ENOENT, "not a regular file", str(relative))
    if opened.st_nlink > 1:
        os.close(fd)
        raise NotInside(f"{relative} has other hard links; a file linked from outside is not read")
    return fd


def _open_step(name: str, flags: int, folder: int, relative: str | PurePosixPath) -> int:
    try:
        return os.open(name, flags | os.O_NOFOLLOW, dir_fd=folder)
    except OSError as exc:
        if exc.errno in (errno.ELOOP, errno.ENOTDIR) and _is_link(name, folder):
            raise NotInside(
                f"{relative} is (or passes through) a symbolic link; links are not followed "
                "out of a workspace"
            ) from None
        raise


def _is_link(name: str, folder: int) -> bool:
    try:
        return stat.S_ISLNK(os.stat(name, dir_fd=folder, follow_symlinks=False).st_mode)
    except OSError:
        return False


def read_inside(root: Path, relative: str | PurePosixPath, limit: int | None = None) -> ReadText:
    """The file's text (UTF-8, errors replaced), at most `limit` bytes of it."""
    fd = open_inside(root, relative)
    with os.fdopen(fd, "rb") as handle:
        data = handle.read() if limit is None else handle.read(limit + 1)
    truncated = limit is not None and len(data) > limit
    kept = data[:limit] if truncated else data
    return ReadText(kept.decode("utf-8", errors="replace"), truncated)


def is_file_inside(root: Path, relative: str | PurePosixPath) -> bool:
    """Whether a regular file is at `relative`, reached without a link."""
    try:
        os.close(open_inside(root, relative))
    except (NotInside, OSError):
        return False
    return True

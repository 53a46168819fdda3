"""The workspace as it was built, and the diff of what the agent changed in it since.

The files as given are read once before the agent starts (text files up to
`COMPARED_BYTES` each and `TEXT_BYTES` in all; others are compared by hash); afterwards every file
is compared with that, and text changes become one unified diff. The files the worker
writes itself (the agent's transcript and its standard error) are not the agent's changes.
"""

from __future__ import annotations

import difflib
import hashlib
import os
from pathlib import Path

from evalrelay.bridge.results.changes import DIFF_CHARS, FileChange, WorkspaceChanges
from evalrelay.bridge.results.trajectory import trimmed
from evalrelay.worker.agents.inside import NotInside, open_inside

COMPARED_BYTES = 1_000_000
"""Files up to this size are kept as text to diff; larger ones only by hash."""

NO_NEWLINE = "\\ No newline at end of file"

TEXT_BYTES = 64_000_000
"""The text kept of a whole workspace; files past it are compared by hash."""

MOST_FILES = 10_000
"""A workspace with more files than this is compared on its first ones only."""


class Snapshot:
    def __init__(self, folder: Path, ignored: frozenset[str] = frozenset()) -> None:
        self.folder = folder
        self.ignored = ignored
        self.files = self._read()

    def _read(self) -> dict[str, bytes | str]:
        """Path to text (or to a hash, for binary and large files)."""
        seen: dict[str, bytes | str] = {}
        budget = TEXT_BYTES
        for name in _files(self.folder)[:MOST_FILES]:
            if self._ignored(name):
                continue
            try:
                seen[name] = _content(self.folder, name, min(budget, COMPARED_BYTES))
            except (NotInside, OSError):
                continue  # a link (never followed out of the workspace), or gone meanwhile
            if isinstance(seen[name], str):
                budget -= len(seen[name])
        return seen

    def _ignored(self, name: str) -> bool:
        """`ignored` names files, and folders with all they hold."""
        return name in self.ignored or any(name.startswith(f"{i}/") for i in self.ignored)

    def changes(self, diff_chars: int = DIFF_CHARS) -> WorkspaceChanges:
        """What differs now from when the snapshot was taken."""
        after = Snapshot(self.folder, self.ignored).files
        files: list[FileChange] = []
        hunks: list[str] = []
        for name in sorted(self.files.keys() | after.keys()):
            old, new = self.files.get(name), after.get(name)
            if isinstance(old, bytes) != isinstance(new, bytes) and None not in (old, new):
                old, new = _digest(old), _digest(new)  # text in one look, a hash in the other
            if old == new:
                continue
            change = "added" if old is None else "deleted" if new is None else "modified"
            in_diff = not isinstance(old, bytes) and not isinstance(new, bytes)
            files.append(FileChange(path=name, change=change, in_diff=in_diff))
            if in_diff:
                hunks.append(_diff(name, old, new))
        diff, cut = trimmed("".join(hunks), diff_chars)
        return WorkspaceChanges(files=files, diff=diff, diff_chars_cut=cut)


def _files(folder: Path) -> list[str]:
    """The workspace's files, `/`-separated and sorted, found without entering a link."""
    found = []
    for where, _, names in os.walk(folder, followlinks=False):
        base = Path(where).relative_to(folder)
        found += [(base / name).as_posix() for name in names]
    return sorted(found)


def _content(folder: Path, name: str, limit: int) -> bytes | str:
    """The file's text, or the hash of its bytes (binary, or over `limit`)."""
    with os.fdopen(open_inside(folder, name), "rb") as stream:
        if os.fstat(stream.fileno()).st_size <= limit:
            data = stream.read(limit + 1)
            if b"\0" not in data and len(data) <= limit:
                try:
                    return data.decode("utf-8")
                except UnicodeDecodeError:
                    pass
            stream.seek(0)
        digest = hashlib.sha256()
        for block in iter(lambda: stream.read(1 << 20), b""):
            digest.update(block)
    return digest.digest()


def _digest(content: bytes | str | None) -> bytes | None:
    if isinstance(content, str):
        return hashlib.sha256(content.encode("utf-8")).digest()
    return content


def _diff(name: str, old: bytes | str | None, new: bytes | str | None) -> str:
    before = old.splitlines(keepends=True) if isinstance(old, str) else []
    after = new.splitlines(keepends=True) if isinstance(new, str) else []
    lines = difflib.unified_diff(
        before,
        after,
        "/dev/null" if old is None else f"a/{name}",
        "/dev/null" if new is None else f"b/{name}",
    )
    return "".join(line if line.endswith("\n") else f"{line}\n{NO_NEWLINE}\n" for line in lines)

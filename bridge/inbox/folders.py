"""The inbox folder: which files in it are eval files to take, and where they go next.

A dropped file moves, never deleted, through lifecycle folders inside the inbox:
`queued/` once its campaign is submitted, then `done/`; an invalid one goes to
`failed/` beside `NAME.error.txt`. A subfolder directly under the inbox names the
target of the files in it.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from pathspec import PathSpec

from evalrelay.bridge.code_box import INBOX_LIFECYCLE as LIFECYCLE
from evalrelay.bridge.evalfile.cases import EVAL_NAME_ENDINGS, NOT_EVAL_FILES

IGNORE_FILE = ".evalrelayignore"
TEMPORARY_SUFFIXES = (".tmp", ".temp", ".swp", ".swx", ".part", ".partial", ".crdownload", "~")
"""Editors' and downloaders' files that are still being written, whatever their name."""


class Inbox:
    def __init__(self, root: Path) -> None:
        self.root = root.resolve()
        for name in LIFECYCLE:
            (self.root / name).mkdir(parents=True, exist_ok=True)
        self._ignore: tuple[float, PathSpec[Any]] | None = None

    def relative(self, path: Path) -> Path | None:
        """The path inside the inbox, or None when it is not in it (or in a lifecycle folder)."""
        absolute = Path(os.path.abspath(path))
        if not absolute.is_relative_to(self.root):
            return None
        relative = absolute.relative_to(self.root)
        if not relative.parts or relative.parts[0] in LIFECYCLE:
            return None
        return relative

    def wants(self, path: Path) -> bool:
        """Whether the file is an eval file to take: not hidden, temporary or ignored."""
        relative = self.relative(path)
        if relative is None:
            return False
        name = relative.name
        if any(part.startswith(".") for part in relative.parts) or name.startswith(("#", "~")):
            return False
        if name.endswith(TEMPORARY_SUFFIXES) or not name.endswith(EVAL_NAME_ENDINGS):
            return False
        if name in NOT_EVAL_FILES:
            return False
        return not self.ignore_spec().match_file(relative.as_posix())

    def wants_queued(self, path: Path) -> bool:
        """Whether a file in `queued/` is a dropped eval file (not a note beside one)."""
        return path.name.endswith(EVAL_NAME_ENDINGS) and not path.name.startswith(".")

    def ignore_spec(self) -> PathSpec[Any]:
        """`.evalrelayignore` in gitignore syntax, read again whenever it changes."""
        path = self.root / IGNORE_FILE
        mtime = path.stat().st_mtime if path.exists() else 0.0
        if self._ignore is None or self._ignore[0] != mtime:
            lines = path.read_text(encoding="utf-8").splitlines() if mtime else []
            self._ignore = (mtime, PathSpec.from_lines("gitignore", lines))
        return self._ignore[1]

    def scan(self) -> list[Path]:
        """Every file the inbox wants right now (lifecycle folders are not looked into)."""
        found = []
        for folder, dirs, files in os.walk(self.root):
            here = Path(folder)
            if here == self.root:
                dirs[:] = [d for d in dirs if d not in LIFECYCLE and not d.startswith(".")]
            found += [here / f for f in files if self.wants(here / f)]
        return sorted(found)

    def folder_target(self, path: Path) -> str | None:
        """`INBOX/<target>/file.yaml` runs on `<target>` unless the file names one."""
        relative = self.relative(path)
        return relative.parts[0] if relative is not None and len(relative.parts) > 1 else None

    def move(self, path: Path, stage: str) -> Path:
        """Move a file into a lifecycle folder, keeping its subfolder; never overwrite."""
        target = self._destination(path, stage)
        os.replace(path, target)
        return target

    def fail(self, path: Path, errors: str) -> Path:
        """Move an invalid file to `failed/` beside `NAME.error.txt` holding its errors.

        The note is there, whole, before the file: whoever sees the file in `failed/`
        can read why."""
        target = self._destination(path, "failed")
        note = target.with_name(target.name + ".error.txt")
        partial = note.with_name(f".{note.name}.partial")
        partial.write_text(errors + "\n", encoding="utf-8")
        os.replace(partial, note)
        os.replace(path, target)
        return target

    def _destination(self, path: Path, stage: str) -> Path:
        """A free name for the file in a lifecycle folder, its subfolder made."""
        relative = self.relative(path) or Path(path.name)
        if path.is_relative_to(self.root) and path.relative_to(self.root).parts[0] in LIFECYCLE:
            relative = Path(*path.relative_to(self.root).parts[1:])
        target = _free_name(self.root / stage / relative)
        target.parent.mkdir(parents=True, exist_ok=True)
        return target


def _free_name(path: Path) -> Path:
    if not path.exists() and not path.is_symlink():
        return path
    for n in range(1, 100_000):
        candidate = path.with_name(f"{path.stem}-{n}{path.suffix}")
        if not candidate.exists() and not candidate.is_symlink():
            return candidate
    raise FileExistsError(f"no free name for {path}")

"""Telling when a dropped file is complete: when it has not changed for a quiet period.

A close-after-write event does not end a file: some writers close a file and open it
again to write more (loggers, exporters that flush in parts), and a file taken at its
first close would run half-written. A close counts as a change like any write; a file
is complete once neither its size, its mtime nor a close has been seen for `settle`
seconds. A writer that pauses longer than that must write to a temporary name (`.part`,
`.tmp`, a dot file) and rename the file into place when it is done.
"""

from __future__ import annotations

import os
import time
from dataclasses import dataclass
from pathlib import Path

SETTLE_SECONDS = 2.0
"""A file this long without a change is complete."""


@dataclass
class Watched:
    size: int
    mtime_ns: int
    changed_at: float


class Settler:
    """Files seen in the inbox, until each is complete (or gone)."""

    def __init__(self, settle: float = SETTLE_SECONDS) -> None:
        self.settle = settle
        self.files: dict[Path, Watched] = {}

    def touched(self, path: Path, closed: bool = False) -> None:
        now = time.monotonic()
        watched = self.files.get(path)
        if watched is None:
            stat = _stat(path)
            if stat is None:
                return
            # A file already older than the quiet period (found by a scan) is complete now.
            age = max(0.0, time.time() - stat.st_mtime)
            self.files[path] = Watched(stat.st_size, stat.st_mtime_ns, now - min(age, self.settle))
        elif closed:
            watched.changed_at = now

    def forget(self, path: Path) -> None:
        self.files.pop(path, None)

    def complete(self) -> list[Path]:
        """The files whose writers are done, removed from watching."""
        now = time.monotonic()
        ready = []
        for path, watched in list(self.files.items()):
            stat = _stat(path)
            if stat is None:
                del self.files[path]
                continue
            if (stat.st_size, stat.st_mtime_ns) != (watched.size, watched.mtime_ns):
                watched.size, watched.mtime_ns = stat.st_size, stat.st_mtime_ns
                watched.changed_at = now
            if now - watched.changed_at >= self.settle:
                ready.append(path)
                del self.files[path]
        return ready

    def waiting(self) -> bool:
        """Whether a watched file is complete now (it stays watched)."""
        now = time.monotonic()
        for path, watched in self.files.items():
            stat = _stat(path)
            unchanged = stat is not None and (stat.st_size, stat.st_mtime_ns) == (
                watched.size,
                watched.mtime_ns,
            )
            if unchanged and now - watched.changed_at >= self.settle:
                return True
        return False

    def due_in(self) -> float:
        """Seconds until the first watched file may be complete (inf when none is watched):
        the watcher looks then, not at its next tick, so a file is taken as it settles."""
        if not self.files:
            return float("inf")
        first = min(watched.changed_at for watched in self.files.values())
        return max(0.0, first + self.settle - time.monotonic())

    def __len__(self) -> int:
        return len(self.files)


def _stat(path: Path) -> os.stat_result | None:
    try:
        return path.lstat()
    except OSError:
        return None

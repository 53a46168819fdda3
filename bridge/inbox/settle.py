"""Telling when a dropped file is complete, from file events and from the file itself.

On Linux a close-after-write event ends a write; elsewhere, and as a fallback for
writers that open and close a file several times, a file whose size and mtime have not
changed for a short debounce is complete.
"""

from __future__ import annotations

import os
import time
from dataclasses import dataclass
from pathlib import Path

CLOSE_SETTLE_SECONDS = 0.3
"""After a close-after-write, this long without another change means the writer is done."""

DEBOUNCE_SECONDS = 2.0
"""Without a close event, a file this long unchanged is complete."""


@dataclass
class Watched:
    size: int
    mtime_ns: int
    changed_at: float
    closed_at: float | None = None


class Settler:
    """Files seen in the inbox, until each is complete (or gone)."""

    def __init__(
        self, debounce: float = DEBOUNCE_SECONDS, close_settle: float = CLOSE_SETTLE_SECONDS
    ) -> None:
        self.debounce = debounce
        self.close_settle = close_settle
        self.files: dict[Path, Watched] = {}

    def touched(self, path: Path, closed: bool = False) -> None:
        now = time.monotonic()
        watched = self.files.get(path)
        if watched is None:
            stat = _stat(path)
            if stat is None:
                return
            # A file already older than the debounce (found by a scan) is complete now.
            age = max(0.0, time.time() - stat.st_mtime)
            watched = Watched(stat.st_size, stat.st_mtime_ns, now - min(age, self.debounce))
            self.files[path] = watched
        if closed:
            # The file is whole at its close: what it looks like now is its final state.
            stat = _stat(path)
            if stat is not None:
                watched.size, watched.mtime_ns = stat.st_size, stat.st_mtime_ns
            watched.closed_at = now

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
                watched.size, watched.mtime_ns, watched.changed_at = (
                    stat.st_size,
                    stat.st_mtime_ns,
                    now,
                )
            closed = watched.closed_at is not None and watched.closed_at >= watched.changed_at
            quiet = now - max(watched.changed_at, watched.closed_at or 0.0)
            if (closed and quiet >= self.close_settle) or now - watched.changed_at >= self.debounce:
                ready.append(path)
                del self.files[path]
        return ready

    def __len__(self) -> int:
        return len(self.files)


def _stat(path: Path) -> os.stat_result | None:
    try:
        return path.lstat()
    except OSError:
        return None

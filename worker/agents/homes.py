"""An agent home (CODEX_HOME, COPILOT_HOME) of its own for every job running at once.

Agents keep sessions, logs and databases in their home folder; two runs sharing one can
trip over each other. Each concurrent run gets a slot folder of this worker process,
seeded once with the user's configuration and credentials from the agent's usual home.
"""

from __future__ import annotations

import os
import shutil
import socket
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from bridge.queue.embedded import evalrelay_home

_lock = threading.Lock()
_busy: set[Path] = set()


@contextmanager
def agent_home(kind: str, seed_from: Path, seed_files: tuple[str, ...]) -> Iterator[Path]:
    """A home folder no other running job of this worker uses until the block ends."""
    base = evalrelay_home() / "agent-homes" / kind
    with _lock:
        slot = 1
        while (folder := base / f"{socket.gethostname()}-{os.getpid()}-{slot}") in _busy:
            slot += 1
        _busy.add(folder)
    try:
        folder.mkdir(parents=True, exist_ok=True)
        for name in seed_files:
            source, target = seed_from / name, folder / name
            stale = not target.exists() or target.stat().st_mtime < source.stat().st_mtime
            if source.is_file() and stale:
                shutil.copy2(source, target)
        yield folder
    finally:
        with _lock:
            _busy.discard(folder)

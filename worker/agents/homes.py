"""An agent home (CODEX_HOME, COPILOT_HOME) of its own for every job running at once.

Agents keep sessions, logs and databases in their home folder; two runs sharing one can
trip over each other. Each concurrent run gets a slot folder of this worker process,
`<host>-<pid>-<slot>`, seeded once with the user's configuration and credentials from
the agent's usual home.

A home is megabytes and every worker process makes its own, so they do not outlive their
process: the process removes its homes when it exits, and the first home a process asks
for removes those of this host's processes that died without doing so (SIGKILL, a
crash, a prefork child).
"""

from __future__ import annotations

import atexit
import logging
import os
import re
import shutil
import socket
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from evalrelay.bridge.queue.embedded import evalrelay_home
from evalrelay.worker.agents.pids import pid_alive

log = logging.getLogger(__name__)

_lock = threading.Lock()
_busy: set[Path] = set()
_swept_for: int | None = None
"""The pid that last removed dead processes' homes: a forked child sweeps again."""


def homes_root() -> Path:
    return evalrelay_home() / "agent-homes"


@contextmanager
def agent_home(kind: str, seed_from: Path, seed_files: tuple[str, ...]) -> Iterator[Path]:
    """A home folder no other running job of this worker uses until the block ends."""
    _sweep_once()
    base = homes_root() / kind
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


def remove_dead_homes() -> list[Path]:
    """Remove the homes of this host's processes that are no longer running; the homes of
    other hosts sharing the folder are theirs to remove."""
    removed = []
    for folder, pid in _homes_of_this_host():
        if not pid_alive(pid):
            shutil.rmtree(folder, ignore_errors=True)
            removed.append(folder)
    if removed:
        log.info("removed %d agent homes of processes that are gone", len(removed))
    return removed


def remove_own_homes() -> None:
    """Remove this process's homes, when it stops: the next process makes its own."""
    for folder, pid in _homes_of_this_host():
        if pid == os.getpid():
            shutil.rmtree(folder, ignore_errors=True)


def _sweep_once() -> None:
    """On a process's first home: clear what dead processes left, and clear up at exit."""
    global _swept_for
    with _lock:
        if _swept_for == os.getpid():
            return
        _swept_for = os.getpid()
    atexit.register(remove_own_homes)
    remove_dead_homes()


def _homes_of_this_host() -> Iterator[tuple[Path, int]]:
    """Each home folder of this host, with the pid of the process it belongs to."""
    name = re.compile(rf"{re.escape(socket.gethostname())}-(\d+)-\d+")
    root = homes_root()
    kinds = [k for k in root.iterdir() if k.is_dir()] if root.is_dir() else []
    for kind in kinds:
        for folder in kind.iterdir():
            mine = name.fullmatch(folder.name)
            if mine and folder.is_dir():
                yield folder, int(mine[1])

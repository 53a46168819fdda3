"""The keeper of the embedded Redis: stops it once no command uses it, however they ended.

Commands using the embedded Redis each hold a shared lock on `users.lock`; the last one
to leave stops the server. A command killed outright (SIGKILL, the OOM killer, a closed
terminal's SIGHUP) never gets to, and its Redis would run on for ever. The lock, though,
is released by the kernel when its holder dies: this small process, started with the
server and the server's parent, stops the server once nobody holds the lock. Should the
keeper itself be killed, the kernel stops the server (Linux's parent-death signal).

Run as `python -m evalrelay.bridge.queue.redis_keeper DATA_DIR REDIS-SERVER ARGS...`; standard
library only, so it starts in a few milliseconds.
"""

from __future__ import annotations

import contextlib
import ctypes
import fcntl
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import IO

USERS_LOCK = "users.lock"
START_LOCK = "start.lock"
POLL_SECONDS = 0.2
STOP_TIMEOUT_SECONDS = 30.0
PR_SET_PDEATHSIG = 1


def main(data_dir: Path, command: list[str]) -> int:
    server = subprocess.Popen(command, stdin=subprocess.DEVNULL, preexec_fn=die_with_parent)
    with (data_dir / USERS_LOCK).open("a+") as users:
        while server.poll() is None:
            if _unused(users) and _still_unused_at_start_lock(data_dir, users):
                server.send_signal(signal.SIGTERM)  # Redis's own clean shutdown
                break
            time.sleep(POLL_SECONDS)
    try:
        return server.wait(STOP_TIMEOUT_SECONDS)
    except subprocess.TimeoutExpired:
        server.kill()
        return server.wait()


def _unused(users: IO[str]) -> bool:
    """Whether no command holds `users.lock` now (taking it shows that; it is let go)."""
    try:
        fcntl.flock(users, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        return False
    fcntl.flock(users, fcntl.LOCK_UN)
    return True


def _still_unused_at_start_lock(data_dir: Path, users: IO[str]) -> bool:
    """Asked again under `start.lock`, which a command holds from finding the server to
    taking its shared lock: so no command starts using a server that is being stopped."""
    with exclusive(data_dir / START_LOCK):
        return _unused(users)


@contextlib.contextmanager
def exclusive(path: Path) -> Iterator[None]:
    """Holding an exclusive lock on the file (`start.lock`), waiting for it if need be."""
    with path.open("a+") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        yield


def die_with_parent() -> None:
    """In a child, before it starts: SIGTERM when its parent dies (Linux only). "The
    parent" is the thread that started it: start children from a thread that lives as
    long as its process (the keeper has only one)."""
    if sys.platform.startswith("linux"):
        ctypes.CDLL(None, use_errno=True).prctl(PR_SET_PDEATHSIG, signal.SIGTERM)


if __name__ == "__main__":
    sys.exit(main(Path(sys.argv[1]), sys.argv[2:]))

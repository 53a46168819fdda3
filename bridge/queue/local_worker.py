"""The local worker of `evalrelay run`: the same Celery worker as in a cluster, in a child
process forked from the command.

Forked, not started afresh: the child has every module the command imported already,
the worker's own too (imported on a thread while the embedded Redis starts), so it is ready
at once, while the command goes on sending (`wait=False`: the command waits for it only
once the jobs are sent); in a process of its own it has a core of its own, where a worker
in the command's process shared one with the collector and the progress display (a
2,000-case run took a third longer that way).

This is the one place the submitting side imports `worker` (import-linter holds the rest
of `bridge` to that).
"""

from __future__ import annotations

import contextlib
import importlib
import logging
import os
import select
import signal
import threading
import time
from collections.abc import Callable, Iterator
from typing import Any, NamedTuple

from evalrelay.bridge.errors import PrerequisiteError

log = logging.getLogger(__name__)

START_TIMEOUT_SECONDS = 20.0
STOP_WAIT_SECONDS = 0.1
STOP_TIMEOUT_SECONDS = 30.0
"""How long the worker may take to finish the jobs it runs once told to stop."""


_importing: list[threading.Thread] = []


def import_worker_meanwhile() -> None:
    """Start importing the worker's modules on a thread while this process waits for
    something else (the embedded Redis to start): the child forked later has them. The
    fork waits for the thread (forked in the middle of an import, the child could find the
    import lock held for good)."""
    if not _importing:
        _importing.append(
            threading.Thread(target=_import_worker, name="evalrelay-worker-imports", daemon=True)
        )
        _importing[0].start()


def _import_worker() -> None:
    """The worker's modules, and the HTTP client its vendors' SDKs are built on."""
    importlib.import_module("evalrelay.worker.app").preload_http_client()


def worker_imported() -> None:
    """Wait for `import_worker_meanwhile`'s thread, if one was started."""
    for thread in _importing:
        thread.join()


class LocalWorker(NamedTuple):
    ready: Callable[[], None]
    """Returns once the worker is ready; raises when it did not start."""
    stop: Callable[[], None]
    """Tells it to finish the jobs it runs and exit, without waiting for it (leaving the
    block waits)."""


@contextlib.contextmanager
def local_worker(
    redis_url: str, queues: list[str], concurrency: int = 16, *, wait: bool = True
) -> Iterator[LocalWorker]:
    """A Celery worker (threads pool) in a child process, stopped on leaving the block.

    The child stops when the pipe from this process closes: on leaving the block (or at
    `stop`), and also when this process dies without leaving it (SIGKILL), so no worker
    outlives it. Ctrl-C is this process's to handle (it cancels the campaign, then stops
    the worker). `ready` is waited for before the block starts unless `wait` is False
    (then the caller calls it, later).
    """
    worker_imported()
    hostname = f"embedded-{os.getpid()}@{os.uname().nodename}"  # named after the command
    ready_read, ready_write = os.pipe()
    stop_read, stop_write = os.pipe()
    child = os.fork()
    if child == 0:  # the child
        os.close(ready_read)
        os.close(stop_write)
        code = 1
        try:
            code = _serve(redis_url, queues, concurrency, hostname, ready_write, stop_read)
        except BaseException:
            log.exception("the local worker failed")
        finally:
            os._exit(code)
    os.close(ready_write)
    os.close(stop_read)
    started = False
    stopping = False

    def ready() -> None:
        nonlocal started
        if not started and not _ready(ready_read, START_TIMEOUT_SECONDS):
            raise PrerequisiteError("the local worker did not start; see the log above")
        started = True

    def stop() -> None:
        nonlocal stopping
        if not stopping:
            stopping = True
            os.close(stop_write)  # the worker finishes the jobs it runs, then exits

    try:
        if wait:
            ready()
        yield LocalWorker(ready, stop)
    finally:
        stop()
        os.close(ready_read)
        _reap(child)


def _ready(ready: int, seconds: float) -> bool:
    """Whether the child said it is ready within `seconds` (a child that died is not)."""
    readable, _, _ = select.select([ready], [], [], seconds)
    return bool(readable) and os.read(ready, 1) == b"1"


def _reap(child: int) -> None:
    deadline = time.monotonic() + STOP_TIMEOUT_SECONDS
    for stop_with in (None, signal.SIGTERM, signal.SIGKILL):
        if stop_with is not None:
            with contextlib.suppress(ProcessLookupError):
                os.kill(child, stop_with)
            deadline = time.monotonic() + 5
        while time.monotonic() < deadline:
            if os.waitpid(child, os.WNOHANG) != (0, 0):
                return
            time.sleep(0.02)
    os.waitpid(child, 0)


def _serve(
    redis_url: str, queues: list[str], concurrency: int, hostname: str, ready: int, stop: int
) -> int:
    """The child: run the worker until the parent's pipe closes or SIGTERM comes."""
    from celery.worker import state as worker_state

    def stop_worker(*_: Any) -> None:
        worker_state.should_stop = 0  # EX_OK: the worker's loop stops it, after its jobs

    # Set before the worker's modules are imported here: Ctrl-C is the command's to handle.
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, stop_worker)

    from evalrelay.worker.app import (
        create_app,
        preload_http_client,
        start_background,
        stop_background,
    )

    def on_ready(consumer: Any) -> None:
        start_background(consumer)
        os.write(ready, b"1")
        os.close(ready)

    def await_parent() -> None:
        os.read(stop, 1)  # returns when the parent closes its end, or dies
        stop_worker()

    preload_http_client()  # the apps' worker_init, which a bare WorkController skips
    app = create_app(redis_url)
    # Stopping waits for the consumer's blocking read to return: a short one makes `run`
    # exit at once instead of up to a second later (idle, it is 10 cheap calls a second).
    app.conf.broker_transport_options = {
        **app.conf.broker_transport_options,
        "polling_interval": STOP_WAIT_SECONDS,
    }
    app.set_default()  # pool threads trace tasks through the default app
    controller = app.WorkController(
        pool="threads",
        concurrency=concurrency,
        queues=queues,
        loglevel="WARNING",
        hostname=hostname,
        ready_callback=on_ready,
        without_mingle=True,
        without_gossip=True,
        without_heartbeat=True,
    )
    threading.Thread(target=await_parent, daemon=True, name="evalrelay-parent").start()
    try:
        controller.start()
    finally:
        stop_background(hostname)
    return 0

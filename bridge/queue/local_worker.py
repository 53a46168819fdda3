"""The local worker of `evalrelay run`: the same Celery worker as in a cluster, in a child
process forked from the command.

Forked at once, before Redis is up or the jobs are planned: the child imports the worker's
modules on a core of its own while the command imports, loads and plans on the other
(`bridge.queue.starting`), and waits to be told where Redis is (`ForkedWorker.serve`,
with the command's environment as it then is: the keys its `.env` files gave). Then it
serves while the command sends; in a process of its own it has a core of its own, where a
worker in the command's process shared one with the collector and the progress display.

This is the one place the submitting side imports `worker` (import-linter holds the rest
of `bridge` to that).
"""

from __future__ import annotations

import contextlib
import logging
import os
import select
import signal
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ValidationError

from evalrelay.bridge.errors import PrerequisiteError
from evalrelay.bridge.queue.embedded import join_users

log = logging.getLogger(__name__)

START_TIMEOUT_SECONDS = 20.0
STOP_WAIT_SECONDS = 0.05
STOP_TIMEOUT_SECONDS = 30.0
"""How long the worker may take to finish the jobs it runs once told to stop."""


class ServeOrder(BaseModel):
    """What the command tells its forked worker, once, on the pipe between them."""

    redis_url: str
    users_lock: str | None
    """The embedded Redis's users lock, which the worker holds too (`join_users`): a command
    killed outright leaves the Redis up until its worker has finished its jobs."""
    environment: dict[str, str]
    """The command's environment when it sent the order: the child was forked before the
    command read its `.env` files, and the keys its targets name come from there."""


class ForkedWorker:
    """The command's side of a forked worker: `serve` starts it, `ready` waits for it,
    `stop` tells it to finish its jobs and exit (closing the pipe, which the command's
    death does too: no worker outlives its command)."""

    def __init__(self, order: int, ready: int) -> None:
        self._order = order
        self._ready = ready
        self._started = False
        self._stopping = False

    def serve(self, redis_url: str, users_lock: Path | None = None) -> None:
        order = ServeOrder(
            redis_url=redis_url,
            users_lock=None if users_lock is None else str(users_lock),
            environment=dict(os.environ),
        )
        try:
            os.write(self._order, order.model_dump_json().encode() + b"\n")
        except BrokenPipeError:
            raise PrerequisiteError("the local worker did not start; see the log above") from None

    def ready(self) -> None:
        """Returns once the worker is ready; raises when it did not start."""
        if not self._started and not _ready(self._ready, START_TIMEOUT_SECONDS):
            raise PrerequisiteError("the local worker did not start; see the log above")
        self._started = True

    def stop(self) -> None:
        """Tells it to finish the jobs it runs and exit, without waiting for it (leaving the
        block waits)."""
        if not self._stopping:
            self._stopping = True
            os.close(self._order)


@contextlib.contextmanager
def forked_worker(queues: list[str], concurrency: int = 16) -> Iterator[ForkedWorker]:
    """A Celery worker (threads pool) in a child process forked now, which serves once told
    where Redis is; stopped on leaving the block. Ctrl-C is this process's to handle (it
    cancels the campaign, then stops the worker)."""
    hostname = f"embedded-{os.getpid()}@{os.uname().nodename}"  # named after the command
    ready_read, ready_write = os.pipe()
    order_read, order_write = os.pipe()
    child = os.fork()
    if child == 0:  # the child
        os.close(ready_read)
        os.close(order_write)
        code = 1
        try:
            code = _serve(queues, concurrency, hostname, ready_write, order_read)
        except BaseException:
            log.exception("the local worker failed")
        finally:
            os._exit(code)
    os.close(ready_write)
    os.close(order_read)
    worker = ForkedWorker(order_write, ready_read)
    try:
        yield worker
    finally:
        worker.stop()
        _reap(child, ready_read)
        os.close(ready_read)


def _ready(ready: int, seconds: float) -> bool:
    """Whether the child said it is ready within `seconds` (a child that died is not)."""
    readable, _, _ = select.select([ready], [], [], seconds)
    return bool(readable) and os.read(ready, 1) == b"1"


def _reap(child: int, life: int) -> None:
    """Wait for the child to exit: it finishes its jobs first (`STOP_TIMEOUT_SECONDS`), then
    is asked to stop (SIGTERM), then made to (SIGKILL). Woken the moment it exits (its end
    of the `life` pipe closes with it), not at the next poll: every `run` waits for this."""
    for stop_with, seconds in ((None, STOP_TIMEOUT_SECONDS), (signal.SIGTERM, 5.0)):
        if stop_with is not None:
            os.kill(child, stop_with)
        if _gone(life, seconds):
            break
    else:
        os.kill(child, signal.SIGKILL)
    os.waitpid(child, 0)


def _gone(life: int, seconds: float) -> bool:
    """Whether the child's end of the `life` pipe closed within `seconds` (a ready byte
    not read yet is passed over)."""
    deadline = time.monotonic() + seconds
    while (left := deadline - time.monotonic()) > 0:
        if select.select([life], [], [], left)[0] and os.read(life, 1) == b"":
            return True
    return False


def _serve(queues: list[str], concurrency: int, hostname: str, ready: int, order: int) -> int:
    """The child: import the worker, wait for the order, run the worker until the parent's
    pipe closes or SIGTERM comes."""
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

    preload_http_client()  # the apps' worker_init, which a bare WorkController skips
    orders = os.fdopen(order, "rb")  # one line, then nothing until the command closes it
    line = orders.readline()
    if not line:
        return 0  # the command ended before it needed a worker
    try:
        told = ServeOrder.model_validate_json(line)
    except ValidationError:  # not its message: pydantic's would quote the environment
        log.error("the local worker could not read its command's order; it stops")
        return 1
    os.environ.update(told.environment)
    # One more user of the embedded Redis, until the worker has finished its jobs.
    users = None if told.users_lock is None else join_users(Path(told.users_lock))

    def on_ready(consumer: Any) -> None:
        start_background(consumer)
        os.write(ready, b"1")  # the pipe stays open: its end is this process's exit

    def await_parent() -> None:
        orders.read()  # returns when the parent closes its end, or dies
        stop_worker()

    app = create_app(told.redis_url)
    # Stopping waits for the consumer's blocking read to return: shorter than a cluster
    # worker's, as every `run` waits for it before it exits (20 cheap calls a second idle).
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
        if users is not None:
            users.close()
    return 0

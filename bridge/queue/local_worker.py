"""An in-process worker: the same Celery worker as in a cluster, run in a thread.

This is the one place the submitting side imports `worker` (import-linter holds the rest
of `bridge` to that).
"""

from __future__ import annotations

import contextlib
import os
import threading
from collections.abc import Iterator
from typing import Any

from bridge.errors import PrerequisiteError

START_TIMEOUT_SECONDS = 20.0
STOP_WAIT_SECONDS = 0.1


@contextlib.contextmanager
def local_worker(redis_url: str, queues: list[str], concurrency: int = 16) -> Iterator[None]:
    """A Celery worker (threads pool) in this process, stopped on leaving the block."""
    from celery.worker import state as worker_state

    from worker.app import create_app, start_background, stop_background

    ready = threading.Event()

    def on_ready(consumer: Any) -> None:
        start_background(consumer)
        ready.set()

    app = create_app(redis_url)
    # Stopping waits for the consumer's blocking read to return: a short one makes `run`
    # exit at once instead of up to a second later (idle, it is 10 cheap calls a second).
    app.conf.broker_transport_options = {
        **app.conf.broker_transport_options,
        "polling_interval": STOP_WAIT_SECONDS,
    }
    app.set_default()  # pool threads trace tasks through the default app
    hostname = f"embedded-{os.getpid()}@{os.uname().nodename}"
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
    thread = threading.Thread(target=controller.start, daemon=True, name="evalrelay-worker")
    thread.start()
    if not ready.wait(START_TIMEOUT_SECONDS):
        raise PrerequisiteError("the in-process worker did not start; see the log above")
    try:
        yield
    finally:
        # The worker's own loop stops it, on its thread: stopping it from this one races
        # kombu's poller over its channels ("Set changed size during iteration").
        worker_state.should_stop = 0  # EX_OK
        try:
            thread.join(timeout=30)
        finally:
            worker_state.should_stop = None  # a later worker in this process runs
        if thread.is_alive():
            controller.stop(in_sighandler=False)
            thread.join(timeout=30)
        stop_background(hostname)

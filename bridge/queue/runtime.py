"""Where commands find Redis and workers: the cluster's, or the embedded default's."""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator
from typing import NamedTuple

import redis

from evalrelay.bridge.connection import connect
from evalrelay.bridge.queue.celery_queue import JobQueue, producer_app
from evalrelay.bridge.queue.starting import Starting, starting


def _nothing() -> None:
    pass


class Runtime(NamedTuple):
    client: redis.Redis
    url: str
    queue: JobQueue
    embedded: bool
    worker_ready: Callable[[], None] = _nothing
    """Returns once the worker this command started is ready (raises if it did not start);
    with `await_worker` False, the command calls it once it has sent its jobs."""
    stop_worker: Callable[[], None] = _nothing
    """Tells the worker this command started to stop, without waiting: it winds down
    while the command prints its summary (leaving the block waits for it)."""


@contextlib.contextmanager
def open_runtime(
    *,
    worker: bool,
    force_local_worker: bool = False,
    concurrency: int = 16,
    await_worker: bool = True,
    started: Starting | None = None,
) -> Iterator[Runtime]:
    """The cluster's Redis when `EVALRELAY_REDIS_URL` is set, else a private one.

    On the embedded default, and with `force_local_worker`, a worker runs in a process
    forked from this one for as long as the block does; with `await_worker` False the
    block starts while it starts (the command calls `worker_ready` before waiting on jobs).
    `started`: what the command started ahead (`bridge.queue.starting`), for `worker` and
    the rest to be taken from; else they are started here.
    """
    with contextlib.ExitStack() as stack:
        if started is None:
            started = stack.enter_context(
                starting(
                    worker=worker, force_local_worker=force_local_worker, concurrency=concurrency
                )
            )
        url = started.redis_url()
        client = connect(url)
        runtime = Runtime(client, url, JobQueue(producer_app(url), client), started.embedded)
        forked = started.serve(url)
        if forked is not None:
            if await_worker:
                forked.ready()
            runtime = runtime._replace(worker_ready=forked.ready, stop_worker=forked.stop)
        yield runtime

"""Where commands find Redis and workers: the cluster's, or the embedded default's."""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator
from typing import NamedTuple

import redis

from evalrelay.bridge.connection import configured_url, connect
from evalrelay.bridge.contract.names import QUEUES
from evalrelay.bridge.queue.celery_queue import JobQueue, producer_app
from evalrelay.bridge.queue.embedded import embedded_redis
from evalrelay.bridge.queue.local_worker import (
    import_worker_meanwhile,
    local_worker,
    worker_imported,
)


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
) -> Iterator[Runtime]:
    """The cluster's Redis when `EVALRELAY_REDIS_URL` is set, else a private one.

    On the embedded default, and with `force_local_worker`, a worker runs in a process
    forked from this one for as long as the block does; with `await_worker` False the
    block starts while it starts (the command calls `worker_ready` before waiting on jobs).
    """
    url = configured_url()
    local = worker and (url is None or force_local_worker)
    with contextlib.ExitStack() as stack:
        embedded = url is None
        if url is None:
            if local:
                import_worker_meanwhile()  # while the embedded Redis starts
            url = stack.enter_context(embedded_redis())
            worker_imported()  # before this thread makes a Celery app of its own
        client = connect(url)
        runtime = Runtime(client, url, JobQueue(producer_app(url), client), embedded)
        if local:
            started = stack.enter_context(
                local_worker(url, list(QUEUES), concurrency, wait=await_worker)
            )
            runtime = runtime._replace(worker_ready=started.ready, stop_worker=started.stop)
        yield runtime

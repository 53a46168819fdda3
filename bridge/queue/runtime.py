"""Where commands find Redis and workers: the cluster's, or the embedded default's."""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator
from typing import NamedTuple

import redis

from bridge.queue.celery_queue import QUEUES, JobQueue, producer_app
from bridge.queue.connection import configured_url, connect
from bridge.queue.embedded import embedded_redis
from bridge.queue.local_worker import local_worker


class Runtime(NamedTuple):
    client: redis.Redis
    url: str
    queue: JobQueue
    embedded: bool
    worker_ready: Callable[[], None] = lambda: None
    """Returns once the worker this command started is ready (raises if it did not start);
    with `await_worker` False, the command calls it once it has sent its jobs."""


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
    with contextlib.ExitStack() as stack:
        embedded = url is None
        if url is None:
            url = stack.enter_context(embedded_redis())
        client = connect(url)
        ready: Callable[[], None] = lambda: None  # noqa: E731
        if worker and (embedded or force_local_worker):
            ready = stack.enter_context(
                local_worker(url, list(QUEUES), concurrency, wait=await_worker)
            )
        yield Runtime(client, url, JobQueue(producer_app(url), client), embedded, ready)

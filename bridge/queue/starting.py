"""Starting what a command runs on before it needs it: the embedded Redis and a local worker.

A command on the embedded default waits for three things before its first job can run:
its own imports and planning, the private Redis, and the worker's imports. Each is a
process's work, so they go side by side: the worker is forked first (it imports on the
other core), the Redis starts on a thread (its keeper is a process of its own), and the
command goes on; `Starting.redis_url` waits for the Redis only when the command needs it.
`evalrelay run` enters `starting` before importing what it runs (`bridge.cli.run`); every
other command enters it through `bridge.queue.runtime.open_runtime`.

This module imports neither Celery nor the worker: it runs before them.
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Iterator
from contextlib import AbstractContextManager

from evalrelay.bridge.connection import configured_url
from evalrelay.bridge.contract.names import QUEUES
from evalrelay.bridge.queue.embedded import embedded_redis, users_lock
from evalrelay.bridge.queue.local_worker import ForkedWorker, forked_worker


class RedisStarting:
    """The embedded Redis, entered on a thread; left on the thread that leaves the block."""

    def __init__(self) -> None:
        self._server: AbstractContextManager[str] = embedded_redis()
        self._url: str | None = None
        self._error: BaseException | None = None
        self._thread = threading.Thread(target=self._enter, name="evalrelay-redis-start")
        self._thread.start()

    def _enter(self) -> None:
        try:
            self._url = self._server.__enter__()
        except BaseException as exc:  # raised where the URL is asked for
            self._error = exc

    def url(self) -> str:
        self._thread.join()
        if self._error is not None:
            raise self._error
        assert self._url is not None
        return self._url

    def leave(self) -> None:
        self._thread.join()
        if self._error is None:
            self._server.__exit__(None, None, None)


class Starting:
    """What `starting` set going: the Redis (the cluster's, or the embedded one starting)
    and the worker forked for this command, if any."""

    def __init__(self, url: str | None, redis: RedisStarting | None, worker: ForkedWorker | None):
        self._url = url
        self._redis = redis
        self.worker = worker

    @property
    def embedded(self) -> bool:
        return self._redis is not None

    def serve(self, url: str) -> ForkedWorker | None:
        """Tell the forked worker, if any, to serve `url`, as one more user of the embedded
        Redis; the worker told."""
        if self.worker is not None:
            self.worker.serve(url, users_lock() if self.embedded else None)
        return self.worker

    def redis_url(self) -> str:
        """The Redis's URL, once it answers."""
        if self._redis is not None:
            return self._redis.url()
        assert self._url is not None
        return self._url


@contextlib.contextmanager
def starting(
    *, worker: bool, force_local_worker: bool = False, concurrency: int = 16
) -> Iterator[Starting]:
    """Start the embedded Redis when no `EVALRELAY_REDIS_URL` is set, and fork a local worker
    when `worker` and the Redis is embedded, or with `force_local_worker`; stop both on
    leaving the block. The worker serves once told (`ForkedWorker.serve`)."""
    url = configured_url()
    server: RedisStarting | None = None
    try:
        with contextlib.ExitStack() as stack:
            forked = None
            if worker and (url is None or force_local_worker):
                # Forked before the Redis thread starts: a child forked while another thread
                # holds a lock (an import's, the logging module's) could wait on it for good.
                forked = stack.enter_context(forked_worker(list(QUEUES), concurrency))
            if url is None:
                server = RedisStarting()
            yield Starting(url, server, forked)
    finally:  # the worker has finished its jobs and exited: then the Redis may stop
        if server is not None:
            server.leave()

"""Celery's Redis transport (kombu), made to ride out a Redis restart, and cheaper per ack.

When the broker connection drops, Celery closes it; closing a channel makes kombu put
the messages the worker had taken back on their queue, for which it builds a new client
from its transport. If that transport was closed already, its `client` is None and kombu
fails with `AttributeError: 'NoneType' object has no attribute 'hostname'`, which is not
one of the connection errors Celery expects there: the worker exits ("Unrecoverable
error"). Seen on 2 of 4 workers at a Redis restart.

Here that case is a connection error, as it is: Celery ignores it and reconnects. The
messages kombu could not put back are not lost: the reaper finds every job a live worker
does not hold and sends it again (`bridge.delivery.outstanding`).

A worker asked to stop waits for its running jobs, but a job cannot report while Redis is
away (it retries for minutes), nor can the worker take itself off `status`: a worker told
to stop while Redis stays out of reach stops without them (`stop_if_redis_stays_away`).
"""

from __future__ import annotations

import contextlib
import logging
import os
import threading
import time
from typing import Any

import kombu.transport
import psutil
import redis
from kombu.transport import redis as kombu_redis

log = logging.getLogger(__name__)

NAME = f"{__name__}:Transport"


class Channel(kombu_redis.Channel):
    _sync_client: redis.Redis | None = None

    def _create_client(self, asynchronous: bool = False) -> Any:
        """kombu builds a new redis-py client for every ack, a tenth of a quick task's time;
        one per connection pool does the same (the client takes a pooled connection for
        each command, from any thread)."""
        if asynchronous:
            return super()._create_client(asynchronous=True)  # type: ignore[no-untyped-call]
        pool = self.pool
        if self._sync_client is None or self._sync_client.connection_pool is not pool:
            self._sync_client = super()._create_client()  # type: ignore[no-untyped-call]
        return self._sync_client

    def _connparams(self, asynchronous: bool = False) -> Any:
        if self.connection.client is None:
            raise redis.ConnectionError("the broker connection is closed")
        return super()._connparams(asynchronous=asynchronous)  # type: ignore[no-untyped-call]


class Transport(kombu_redis.Transport):
    Channel = Channel


def use_for_redis_urls() -> None:
    """Make `redis://`, `rediss://` and `redis+socket://` URLs use this transport in this
    process (kombu's alias table is how a transport is chosen for a URL scheme)."""
    for scheme in ("redis", "rediss"):
        kombu.transport.TRANSPORT_ALIASES[scheme] = NAME
        kombu.transport._transport_cache.pop(scheme, None)  # resolved before this call


STOP_GRACE_SECONDS = 10.0
"""How long Redis may stay out of reach after a worker is told to stop before it stops
without its running jobs. Their leases run out and the reaper sends them again."""


def stop_if_redis_stays_away(url: str, grace: float = STOP_GRACE_SECONDS) -> None:
    """From now on (the worker was told to stop), end this process, and every process it
    started, once Redis has not answered for `grace` seconds in a row."""
    threading.Thread(
        target=_watch_redis, args=(url, grace), daemon=True, name="evalrelay-stop-watch"
    ).start()


def _watch_redis(url: str, grace: float) -> None:
    down_since: float | None = None
    while True:
        if _answers(url):
            down_since = None
        elif down_since is None:
            down_since = time.monotonic()
        elif time.monotonic() - down_since >= grace:
            _stop_now(grace)
        time.sleep(0.5)


def _answers(url: str) -> bool:
    client = redis.Redis.from_url(url, socket_connect_timeout=1, socket_timeout=1)
    try:
        return bool(client.ping())
    except (redis.RedisError, OSError):
        return False
    finally:
        client.close()


def _stop_now(grace: float) -> None:
    """Exit at once: a prefork pool's children and the agents jobs started go too, so no
    job runs on without a worker to report it."""
    log.warning(
        "Redis out of reach for %.0f s since the worker was told to stop: stopping without "
        "the jobs still running; they are sent again when their leases run out",
        grace,
    )
    for handler in logging.getLogger().handlers:
        handler.flush()
    for child in psutil.Process().children(recursive=True):
        with contextlib.suppress(psutil.Error):  # gone already
            child.kill()
    os._exit(1)

"""Celery's Redis transport (kombu), made to ride out a Redis restart, and cheaper per ack.

When the broker connection drops, Celery closes it; closing a channel makes kombu put
the messages the worker had taken back on their queue, for which it builds a new client
from its transport. If that transport was closed already, its `client` is None and kombu
fails with `AttributeError: 'NoneType' object has no attribute 'hostname'`, which is not
one of the connection errors Celery expects there: the worker exits ("Unrecoverable
error"). Seen on 2 of 4 workers at a Redis restart.

Here that case is a connection error, as it is: Celery ignores it and reconnects. The
messages kombu could not put back are not lost: the reaper finds every job a live worker
does not hold and sends it again (`bridge.queue.outstanding`).
"""

from __future__ import annotations

from typing import Any

import kombu.transport
import redis
from kombu.transport import redis as kombu_redis

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

"""Connecting to Redis: one URL, `EVALRELAY_REDIS_URL`, for redis-py and for Celery alike."""

from __future__ import annotations

import logging
import os
import socket
import struct
import time
from collections.abc import Callable
from pathlib import Path
from typing import TypeVar
from urllib.parse import parse_qsl, quote, urlencode, urlsplit, urlunsplit

import redis
from redis.backoff import ExponentialBackoff
from redis.retry import Retry

from evalrelay.bridge.errors import PrerequisiteError
from evalrelay.bridge.masking import MASK, SECRET_QUERY_NAMES, mask

log = logging.getLogger(__name__)

T = TypeVar("T")

URL_VARIABLE = "EVALRELAY_REDIS_URL"

RECONNECT_TRIES = 10
"""About ten seconds of retries before a Redis outage becomes an error."""

REPLY_TIMEOUT_SECONDS = 10.0
"""How long a command waits for its reply before its connection is taken for dead and the
command is sent again on a new one. Without it, a connection whose far end vanished with
no word (a partition that does not heal, a Redis moved to another host, a frozen one)
keeps its thread waiting for ever (redis-py before 8 waits so unless told), and with it
every job that thread serves. Far above
any command evalrelay sends: the collector blocks 1 s at most."""


PASSWORD_FILE_VARIABLE = "EVALRELAY_REDIS_PASSWORD_FILE"
"""A file holding the password for `EVALRELAY_REDIS_URL` (a mounted secret): read by the
process itself, so the password is in no environment a child could read."""


def configured_url() -> str | None:
    """The cluster's Redis, or None for the embedded default; with the password of
    `EVALRELAY_REDIS_PASSWORD_FILE` when that is set."""
    url = os.environ.get(URL_VARIABLE) or None
    path = os.environ.get(PASSWORD_FILE_VARIABLE)
    if url is None or not path:
        return url
    try:
        password = Path(path).read_text(encoding="utf-8").rstrip("\r\n")
    except OSError as exc:
        raise PrerequisiteError(
            f"{PASSWORD_FILE_VARIABLE} names {path}, which cannot be read ({exc.strerror}); "
            "point it at the file holding Redis's password"
        ) from None
    return with_password(url, password)


def with_password(url: str, password: str) -> str:
    """`url` with `password` in its user part (escaped), its user name kept."""
    parts = urlsplit(url)
    userinfo, _, host = parts.netloc.rpartition("@")
    user = userinfo.partition(":")[0]
    netloc = f"{user}:{quote(password, safe='')}@{host or parts.netloc}"
    return urlunsplit(parts._replace(netloc=netloc))


def broker_url(url: str) -> str:
    """Celery spells a Unix socket `redis+socket://`; redis-py spells it `unix://`."""
    return "redis+socket://" + url.removeprefix("unix://") if url.startswith("unix://") else url


def shown(url: str) -> str:
    """The URL with any password masked, in its userinfo or its query (`?password=`), fit
    for messages and logs."""
    try:
        parts = urlsplit(url)
        password, port = parts.password, parts.port
    except ValueError:  # not a URL one can read: show none of it
        return MASK
    if password is not None:
        host = parts.hostname or ""
        netloc = f"{parts.username or ''}:{MASK}@{host}" + (f":{port}" if port else "")
        parts = parts._replace(netloc=netloc)
    query = parse_qsl(parts.query, keep_blank_values=True)
    if any(SECRET_QUERY_NAMES.match(name) for name, _ in query):
        hidden = [(n, MASK if SECRET_QUERY_NAMES.match(n) else v) for n, v in query]
        parts = parts._replace(query=urlencode(hidden, safe="*"))
    joined = urlunsplit(parts)
    if url.startswith(f"{parts.scheme}://") and not joined.startswith(f"{parts.scheme}://"):
        joined = f"{parts.scheme}://" + joined.removeprefix(f"{parts.scheme}:")  # unix:///path
    return joined


RESET_ON_CLOSE = struct.pack("ii", 1, 0)
"""`SO_LINGER` on, for 0 s: closing the socket resets the connection and drops whatever it
had not yet delivered."""


class _ResetOnClose:
    """A TCP connection to Redis that is reset when closed, never closed gracefully.

    A connection is closed when a reply did not come (a network partition): the client then
    sends the command again on a new connection. Closed gracefully, the old socket would
    keep retransmitting the command it had not delivered, and once the partition heals
    Redis would run it a second time, up to a minute after the client gave up on it (a
    count such as the calls paid again then counts twice). Reset, the kernel drops it: a
    command the client gave up on before Redis received it never runs. One whose reply
    alone was lost has run, and runs again: every script evalrelay sends is safe to repeat.
    """

    def _connect(self) -> socket.socket:
        sock: socket.socket = super()._connect()  # type: ignore[misc]
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, RESET_ON_CLOSE)
        return sock


class ResettingConnection(_ResetOnClose, redis.Connection):
    """`redis://`: reset when closed (`_ResetOnClose`)."""


class ResettingSSLConnection(_ResetOnClose, redis.SSLConnection):
    """`rediss://`: reset when closed (`_ResetOnClose`)."""


def _connection_class(url: str) -> dict[str, type[redis.Connection]]:
    """The connection class for `url`'s scheme, as `from_url`'s keyword; none for a Unix
    socket, which has no retransmissions to outlive its close."""
    scheme = urlsplit(url).scheme
    if scheme == "rediss":
        return {"connection_class": ResettingSSLConnection}
    return {"connection_class": ResettingConnection} if scheme == "redis" else {}


def client_for(url: str, reply_timeout: float = REPLY_TIMEOUT_SECONDS) -> redis.Redis:
    """A client that rides out a short Redis outage (a restart) by retrying with backoff.

    Every script evalrelay runs is safe to repeat: it checks before it writes. A command
    is sent again only when its connection failed, and the failed connection is reset
    (`_ResetOnClose`), so an undelivered copy does not run later.
    """
    return redis.Redis.from_url(
        url,
        **_connection_class(url),
        decode_responses=True,
        socket_connect_timeout=5,
        socket_timeout=reply_timeout,
        health_check_interval=30,
        retry=Retry(ExponentialBackoff(cap=2.0, base=0.1), RECONNECT_TRIES),
        retry_on_error=[redis.ConnectionError, redis.TimeoutError],
    )


def connect(url: str) -> redis.Redis:
    """A client that has answered PING, or a PrerequisiteError saying what to do."""
    try:
        # The first PING does not retry: a Redis that is not there is an error at once.
        redis.Redis.from_url(url, socket_connect_timeout=5).ping()
    except (redis.RedisError, ValueError, OSError) as exc:
        raise PrerequisiteError(
            f"cannot reach Redis at {shown(url)} ({type(exc).__name__}: {mask(str(exc))}); start "
            f"it, fix {URL_VARIABLE}, or unset {URL_VARIABLE} to run on a private embedded Redis"
        ) from None
    return client_for(url)


OUTAGE_BACKOFF = ExponentialBackoff(cap=5.0, base=0.5)
"""Between two tries of a step while Redis is out of reach: soon, then every 5 s."""

OUTAGE_TRIES = 120
"""About ten minutes of tries, 5 s apart, of a worker's step that must not fail for an
outage: reading a job, taking its lease, publishing its result. A worker that gave one up
would still hold the job's message, and nobody would send it again while it lives."""


def through_outage(step: Callable[[], T], waiting: Callable[[Exception], object]) -> T:
    """`step`, tried again while Redis is out of reach (`OUTAGE_TRIES`); `waiting` is told
    of each failure. The step must be safe to repeat."""
    return Retry(OUTAGE_BACKOFF, OUTAGE_TRIES).call_with_retry(step, waiting)


class RideOut:
    """Runs a step of a long-lived loop (collecting, following a campaign) again until Redis
    answers, however long it is away: a Redis restart, a failover or a network partition
    must not end a command that is only waiting for results. Says once that Redis is out
    of reach, and again when it is back."""

    def __init__(
        self, say: Callable[[str], object] = log.warning, client: redis.Redis | None = None
    ) -> None:
        self.say = say
        self.down_since: float | None = None
        self.where = f" at {address(client)}" if client is not None else ""

    def __call__(self, step: Callable[[], T]) -> T:
        result = Retry(OUTAGE_BACKOFF, -1).call_with_retry(step, self._failed)
        if self.down_since is not None:
            self.say(f"Redis answers again after {time.monotonic() - self.down_since:.0f} s")
            self.down_since = None
        return result

    def _failed(self, error: Exception) -> None:
        if self.down_since is None:
            self.down_since = time.monotonic()
            self.say(
                f"Redis is out of reach{self.where} ({mask(str(error))}); waiting for it, "
                "nothing is lost"
            )


def address(client: redis.Redis) -> str:
    """Where a client connects, as a URL with no user or password: for messages."""
    settings = client.connection_pool.connection_kwargs
    if settings.get("path"):
        return f"unix://{settings['path']}"
    scheme = (
        "rediss" if client.connection_pool.connection_class.__name__ == "SSLConnection" else "redis"
    )
    return f"{scheme}://{settings.get('host')}:{settings.get('port')}/{settings.get('db', 0)}"

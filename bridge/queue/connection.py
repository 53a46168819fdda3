"""Connecting to Redis: one URL, `EVALRELAY_REDIS_URL`, for redis-py and for Celery alike."""

from __future__ import annotations

import os
from urllib.parse import urlsplit, urlunsplit

import redis
from redis.backoff import ExponentialBackoff
from redis.retry import Retry

from bridge.errors import PrerequisiteError

URL_VARIABLE = "EVALRELAY_REDIS_URL"

RECONNECT_TRIES = 10
"""About ten seconds of retries before a Redis outage becomes an error."""


def configured_url() -> str | None:
    """The cluster's Redis, or None for the embedded default."""
    return os.environ.get(URL_VARIABLE) or None


def broker_url(url: str) -> str:
    """Celery spells a Unix socket `redis+socket://`; redis-py spells it `unix://`."""
    return "redis+socket://" + url.removeprefix("unix://") if url.startswith("unix://") else url


def shown(url: str) -> str:
    """The URL with any password masked, fit for messages and logs."""
    parts = urlsplit(url)
    if parts.password is None:
        return url
    host = parts.hostname or ""
    netloc = f"{parts.username or ''}:***@{host}" + (f":{parts.port}" if parts.port else "")
    return urlunsplit(parts._replace(netloc=netloc))


def client_for(url: str) -> redis.Redis:
    """A client that rides out a short Redis outage (a restart) by retrying with backoff.

    Every script evalrelay runs is safe to repeat: it checks before it writes.
    """
    return redis.Redis.from_url(
        url,
        decode_responses=True,
        socket_connect_timeout=5,
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
            f"cannot reach Redis at {shown(url)} ({type(exc).__name__}: {exc}); start it, fix "
            f"{URL_VARIABLE}, or unset {URL_VARIABLE} to run on a private embedded Redis"
        ) from None
    return client_for(url)

"""Connecting to Redis: one URL, `EVALRELAY_REDIS_URL`, for redis-py and for Celery alike."""

from __future__ import annotations

import os
from urllib.parse import urlsplit, urlunsplit

import redis

from bridge.errors import PrerequisiteError

URL_VARIABLE = "EVALRELAY_REDIS_URL"


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


def connect(url: str) -> redis.Redis:
    """A client that has answered PING, or a PrerequisiteError saying what to do."""
    try:
        client = redis.Redis.from_url(
            url, decode_responses=True, socket_connect_timeout=5, health_check_interval=30
        )
        client.ping()
    except (redis.RedisError, ValueError, OSError) as exc:
        raise PrerequisiteError(
            f"cannot reach Redis at {shown(url)} ({type(exc).__name__}: {exc}); start it, fix "
            f"{URL_VARIABLE}, or unset {URL_VARIABLE} to run on a private embedded Redis"
        ) from None
    return client

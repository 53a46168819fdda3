"""Collectors that cannot write their file (a full disk, a file-size limit, an I/O error),
told to Redis so that `evalrelay status` and `serve` say so: such a collector stops
acknowledging results, which wait in the stream, and nothing else would show it."""

from __future__ import annotations

import errno
import socket
from datetime import datetime

import redis
from pydantic import BaseModel, ConfigDict, ValidationError

from evalrelay.bridge.clock import now_seconds
from evalrelay.bridge.keys import cannot_write_key

STALE_SECONDS = 120.0
"""An error not said again for this long is a collector's that stopped: no longer shown."""


class WriteError(BaseModel):
    """One collector's disk error on one campaign's file, since it began."""

    model_config = ConfigDict(extra="ignore")

    collector: str
    host: str
    campaign_id: str
    path: str
    error: str
    since: float
    seen: float

    def __str__(self) -> str:
        since = datetime.fromtimestamp(self.since).astimezone()
        return (
            f"collector {self.collector}: cannot write {self.host}:{self.path}: {self.error} "
            f"since {since:%Y-%m-%d %H:%M:%S %Z}; its results wait in Redis"
        )


def describe(exc: OSError) -> str:
    """`No space left on device (ENOSPC)`: what the system said, and its name to search for."""
    name = errno.errorcode.get(exc.errno or 0)
    text = exc.strerror or str(exc)
    return f"{text} ({name})" if name else text


def cannot_write(
    client: redis.Redis, collector: str, campaign_id: str, path: str, error: str, since: float
) -> WriteError:
    said = WriteError(
        collector=collector,
        host=socket.gethostname(),
        campaign_id=campaign_id,
        path=path,
        error=error,
        since=since,
        seen=now_seconds(client),  # Redis's clock: status reads it on any host
    )
    client.hset(cannot_write_key(), _field(collector, campaign_id), said.model_dump_json())
    return said


def can_write(client: redis.Redis, collector: str, campaign_id: str) -> None:
    client.hdel(cannot_write_key(), _field(collector, campaign_id))


def write_errors(client: redis.Redis) -> list[WriteError]:
    """The errors collectors said lately, oldest first (only reads Redis)."""
    now = now_seconds(client)
    found = []
    for raw in client.hvals(cannot_write_key()):
        try:
            said = WriteError.model_validate_json(raw)
        except ValidationError:
            continue
        if now - said.seen < STALE_SECONDS:
            found.append(said)
    return sorted(found, key=lambda e: (e.since, e.collector, e.campaign_id))


def _field(collector: str, campaign_id: str) -> str:
    return f"{collector} {campaign_id}"

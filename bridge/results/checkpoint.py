"""Results out of the stream once their lines are safe in a file: kept compressed instead.

A result waiting in its campaign's stream costs Redis its whole JSON. Once a collector has
fsynced a result's line and acknowledged its entry, the entry is only there for a
collector that takes the campaign over on another host, into a file of its own, and
must copy in what the first one wrote (`bridge.results.collected.copy_from_stream`).
So the collector moves acknowledged entries, `CHECKPOINT_ENTRIES` at a time, into one
zlib-compressed segment of the campaign's checkpoint list, deleting the entries in the
same transaction: a result is always in the stream or in a segment, never in neither, and
a takeover's file is whole, from the stream and the segments together. Both go once the
campaign's file is complete.
"""

from __future__ import annotations

import os
import zlib
from collections.abc import Iterator, Sequence
from typing import Any, cast

import redis
from redis.client import NEVER_DECODE

from evalrelay.bridge.keys import checkpoint_key, results_stream_key

CHECKPOINT_ENTRIES = int(os.environ.get("EVALRELAY_CHECKPOINT_ENTRIES", "500"))
"""Acknowledged entries moved at a time: enough for zlib to find what results share
(about a tenth of their size then), few enough to keep the stream short."""

SEGMENTS_READ = 100
"""Segments read at a time when copying results out of the checkpoint."""


def move_to_checkpoint(
    client: redis.Redis, campaign_id: str, entries: Sequence[tuple[str, str | None]]
) -> None:
    """Delete the acknowledged `entries` (id, result JSON or None when unreadable) from the
    stream and push their results as one segment, in one transaction."""
    if not entries:
        return
    results = [result for _, result in entries if result is not None]
    pipe = client.pipeline(transaction=True)
    if results:
        pipe.rpush(checkpoint_key(campaign_id), compress(results))
    pipe.xdel(results_stream_key(campaign_id), *[entry_id for entry_id, _ in entries])
    pipe.execute()


def checkpointed(client: redis.Redis, campaign_id: str) -> Iterator[str]:
    """Every result JSON in the campaign's checkpoint, oldest first."""
    start = 0
    while True:
        end = start + SEGMENTS_READ - 1
        options: dict[str, Any] = {NEVER_DECODE: []}
        key = checkpoint_key(campaign_id)
        page = cast(list[bytes], client.execute_command("LRANGE", key, start, end, **options))  # type: ignore[no-untyped-call]
        for segment in page:
            yield from decompress(segment)
        if len(page) < SEGMENTS_READ:
            return
        start += SEGMENTS_READ


def compress(results: Sequence[str]) -> bytes:
    """A result's JSON never holds a raw line break: one per line."""
    return zlib.compress("\n".join(results).encode(), 6)


def decompress(segment: bytes) -> list[str]:
    return zlib.decompress(segment).decode().split("\n")

"""Attached files' text in Redis, stored once by content hash, so no worker needs shared disk."""

from __future__ import annotations

from collections.abc import Iterable

import redis

from bridge.evalfile.files import ResolvedFile
from bridge.keys import blob_key

BLOB_TTL_SECONDS = 30 * 24 * 3600
"""How long an attached file's text stays available to workers after its last campaign."""


def store_blobs(
    client: redis.Redis,
    files: Iterable[ResolvedFile],
    pipeline: redis.client.Pipeline | None = None,
) -> None:
    pipe = pipeline if pipeline is not None else client.pipeline(transaction=False)
    for file in files:
        pipe.set(blob_key(file.sha256), file.text, ex=BLOB_TTL_SECONDS)
    if pipeline is None:
        pipe.execute()


def fetch_blob(client: redis.Redis, sha256: str) -> str:
    text = client.get(blob_key(sha256))
    if text is None:
        raise KeyError(f"attached file {sha256[:12]} is no longer in Redis; run the campaign again")
    return str(text)

"""Files in Redis, stored once by content hash, so no worker needs shared disk: attached
files' text, and the bytes of task folders' files and of trials' collected files."""

from __future__ import annotations

import base64
import hashlib
from collections.abc import Iterable
from pathlib import Path

import redis

from evalrelay.bridge.evalfile.harbor.folder import TaskFile
from evalrelay.bridge.evalfile.resolved import ResolvedFile
from evalrelay.bridge.keys import blob_key, bytes_key

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


def store_task_files(client: redis.Redis, folder: Path, files: Iterable[TaskFile]) -> None:
    """A task folder's files, those Redis lacks, read again from `folder`; a file that
    changed since the task was loaded is refused (its job names the content loaded)."""
    files = list(files)
    if not files:
        return
    present = client.pipeline(transaction=False)
    for file in files:
        present.expire(bytes_key(file.sha256), BLOB_TTL_SECONDS)  # kept longer if there
    missing = [f for f, there in zip(files, present.execute(), strict=True) if not there]
    pipe = client.pipeline(transaction=False)
    for file in missing:
        data = (folder / file.path).read_bytes()
        if hashlib.sha256(data).hexdigest() != file.sha256:
            raise OSError(f"{folder / file.path} changed while the campaign was submitted")
        pipe.set(bytes_key(file.sha256), base64.b64encode(data), ex=BLOB_TTL_SECONDS)
    pipe.execute()


def store_bytes(client: redis.Redis, data: bytes, seconds: int = BLOB_TTL_SECONDS) -> str:
    """`data` stored by its hash; the hash."""
    sha256 = hashlib.sha256(data).hexdigest()
    client.set(bytes_key(sha256), base64.b64encode(data), ex=seconds)
    return sha256


def fetch_bytes(client: redis.Redis, sha256: str) -> bytes:
    text = client.get(bytes_key(sha256))
    if text is None:
        raise KeyError(f"file {sha256[:12]} is no longer in Redis; run the campaign again")
    return base64.b64decode(text)


def fetch_many(client: redis.Redis, hashes: list[str]) -> list[bytes]:
    """`fetch_bytes` of each, in one round trip."""
    if not hashes:
        return []
    texts = client.mget([bytes_key(h) for h in hashes])
    gone = [h[:12] for h, t in zip(hashes, texts, strict=True) if t is None]
    if gone:
        raise KeyError(f"files {', '.join(gone)} are no longer in Redis; run the campaign again")
    return [base64.b64decode(str(t)) for t in texts]

"""Stored jobs, compressed against their campaign's first job.

The jobs of a campaign share most of their JSON: field names, the target's settings, the
system prompt, the evaluators. Compressed with zlib against a dictionary made of the
campaign's first job, a stored job keeps only what sets it apart: what is shared is
stored once, in the dictionary (docs/performance.md has the bytes per case). A stored
value is `FORMAT`, the first 16 hex digits of the dictionary's SHA-256 (a dictionary
made again, after the campaign was compacted and retried, is told apart), the campaign
id and a line break, then the compressed JSON. Each process keeps the dictionaries it
read (they never change). A value of another format is unreadable: it is logged and
taken as not stored.
"""

from __future__ import annotations

import hashlib
import logging
import zlib
from collections.abc import Sequence
from typing import Any, cast

import redis
from pydantic import ValidationError
from redis.client import NEVER_DECODE

from evalrelay.bridge.contract.job import Job
from evalrelay.bridge.keys import job_dictionary_key, job_key
from evalrelay.bridge.results.retention import RETENTION_SECONDS

log = logging.getLogger(__name__)

FORMAT = b"z1"

DIGEST_BYTES = 16
"""Hex digits of the dictionary's SHA-256 in a stored value: text, never a line break."""

_dictionaries: dict[tuple[str, bytes], bytes] = {}
"""(campaign, digest) to dictionary, read once per process."""

MAX_CACHED = 256


def encoded(client: redis.Redis, jobs: Sequence[Job]) -> dict[str, bytes]:
    """Each job's stored value, by job id; a campaign's dictionary is made by the first
    of its jobs ever stored (and kept as long as its jobs)."""
    values: dict[str, bytes] = {}
    for campaign_id in dict.fromkeys(job.campaign_id for job in jobs):
        ones = [job for job in jobs if job.campaign_id == campaign_id]
        dictionary = _dictionary_for(client, campaign_id, ones[0])
        digest = _digest(dictionary)
        head = FORMAT + digest + campaign_id.encode() + b"\n"
        for job in ones:
            packer = zlib.compressobj(9, zdict=dictionary)
            data = job.stored_json().encode()
            values[job.job_id] = head + packer.compress(data) + packer.flush()
    return values


def _dictionary_for(client: redis.Redis, campaign_id: str, first: Job) -> bytes:
    key = job_dictionary_key(campaign_id)
    client.set(key, first.stored_json().encode(), nx=True, ex=RETENTION_SECONDS)
    client.expire(key, RETENTION_SECONDS)  # as long as the jobs stored now
    dictionary = _get(client, key)
    assert dictionary is not None  # set just now if it was not there
    _remember(campaign_id, dictionary)
    return dictionary


def read_jobs(client: redis.Redis, job_ids: Sequence[str]) -> list[Job | None]:
    """The stored jobs, None for each not stored (or unreadable)."""
    if not job_ids:
        return []
    options: dict[str, Any] = {NEVER_DECODE: []}
    keys = [job_key(j) for j in job_ids]
    raws = cast(list[bytes | None], client.execute_command("MGET", *keys, **options))  # type: ignore[no-untyped-call]
    return [decoded(client, raw, job_id) for job_id, raw in zip(job_ids, raws, strict=True)]


def read_job(client: redis.Redis, job_id: str) -> Job | None:
    return read_jobs(client, [job_id])[0]


def decoded(client: redis.Redis, raw: bytes | None, job_id: str = "") -> Job | None:
    if raw is None:
        return None
    if not raw.startswith(FORMAT):
        log.error("job %s: stored job is not in format %s; it cannot be read", job_id, FORMAT)
        return None
    try:
        digest, campaign_id, data = _parts(raw)
        dictionary = _dictionary(client, campaign_id, digest)
        if dictionary is None:
            log.error("job %s: its campaign's job dictionary is gone; it cannot be read", job_id)
            return None
        unpacker = zlib.decompressobj(zdict=dictionary)
        return Job.model_validate_json(unpacker.decompress(data) + unpacker.flush())
    except (ValidationError, zlib.error, UnicodeDecodeError):
        log.exception("job %s: stored job is unreadable", job_id)
        return None


def campaign_of(raw: bytes | None) -> str | None:
    """The campaign a stored value belongs to, without decompressing it; None for a value
    of another format (or none)."""
    if raw is None or not raw.startswith(FORMAT):
        return None
    return _parts(raw)[1]


def _parts(raw: bytes) -> tuple[bytes, str, bytes]:
    """A stored value's dictionary digest, campaign id and compressed JSON."""
    start = len(FORMAT) + DIGEST_BYTES
    campaign_id, _, data = raw[start:].partition(b"\n")
    return raw[len(FORMAT) : start], campaign_id.decode(errors="replace"), data


def _digest(dictionary: bytes) -> bytes:
    return hashlib.sha256(dictionary).hexdigest()[:DIGEST_BYTES].encode()


def _dictionary(client: redis.Redis, campaign_id: str, digest: bytes) -> bytes | None:
    cached = _dictionaries.get((campaign_id, digest))
    if cached is not None:
        return cached
    dictionary = _get(client, job_dictionary_key(campaign_id))
    if dictionary is None or _digest(dictionary) != digest:
        return None
    _remember(campaign_id, dictionary)
    return dictionary


def _remember(campaign_id: str, dictionary: bytes) -> None:
    if len(_dictionaries) >= MAX_CACHED:
        _dictionaries.pop(next(iter(_dictionaries)))
    digest = _digest(dictionary)
    _dictionaries[(campaign_id, digest)] = dictionary


def _get(client: redis.Redis, key: str) -> bytes | None:
    options: dict[str, Any] = {NEVER_DECODE: []}
    return cast(bytes | None, client.execute_command("GET", key, **options))  # type: ignore[no-untyped-call]

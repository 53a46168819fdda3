"""A campaign's manifest: the id of every job it expects a result for.

The ids are fields, with empty values, of `JOB_BUCKETS` hashes per campaign
(`bridge.keys.manifest_key`), which Redis keeps packed while small: about 40 B an id,
against 96 B as members of one set (docs/performance.md); `listed_key` counts them, since
counting the hashes would take thousands of commands.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import Any

import redis

from evalrelay.bridge.keys import listed_key, manifest_key, manifest_keys
from evalrelay.bridge.lua_scripts import LIST_JOBS

PARTS_AT_ONCE = 512
"""Hashes of the manifest read in one round trip."""


def list_jobs(pipe: Any, campaign_id: str, job_ids: Iterable[str], seconds: int) -> None:
    """List the jobs in the campaign's manifest (those listed already are left as they are),
    in the caller's pipeline; the manifest and its count live `seconds` from now."""
    parts: dict[str, list[str]] = {}
    for job_id in job_ids:
        parts.setdefault(manifest_key(campaign_id, job_id), []).append(job_id)
    args: list[str | int] = [seconds]
    for ids in parts.values():
        args += [len(ids), *ids]
    pipe.eval(LIST_JOBS, len(parts) + 1, listed_key(campaign_id), *parts, *args)


def listed_ids(client: redis.Redis, campaign_id: str) -> Iterator[str]:
    """Every id the campaign's manifest lists, `PARTS_AT_ONCE` of its hashes at a time."""
    keys = manifest_keys(campaign_id)
    for start in range(0, len(keys), PARTS_AT_ONCE):
        pipe = client.pipeline(transaction=False)
        for key in keys[start : start + PARTS_AT_ONCE]:
            pipe.hkeys(key)
        for ids in pipe.execute():
            yield from (str(job_id) for job_id in ids)


def manifest_record(campaign_id: str) -> list[str]:
    """Every key of the campaign's manifest, its count with it: to remove them all."""
    return [*manifest_keys(campaign_id), listed_key(campaign_id)]

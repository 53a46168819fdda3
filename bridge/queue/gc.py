"""`evalrelay gc`: what Redis keeps past a campaign's retention, and what nobody owns.

A campaign's keys expire with its retention, but not all of them carry a time to live
(the sets and counts its collector writes), and a campaign whose collector died between
its last line and compacting it keeps its jobs. This removes what a campaign older than
`RETENTION_SECONDS` left, compacts the complete campaigns nobody collects, and removes
per-job keys whose campaign Redis no longer knows.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any, cast

import redis
from pydantic import BaseModel
from redis.client import NEVER_DECODE

from evalrelay.bridge.clock import now_seconds
from evalrelay.bridge.contract.stored import campaign_of
from evalrelay.bridge.keys import (
    campaign_key,
    campaigns_key,
    checkpoint_key,
    collected_key,
    job_dictionary_key,
    job_key,
    listed_key,
    manifest_prefix,
    rebuild_lock_key,
)
from evalrelay.bridge.queue.campaigns import progress_many
from evalrelay.bridge.results.collected import empty_stream
from evalrelay.bridge.results.collector import collectors_of
from evalrelay.bridge.results.manifest import listed_ids, manifest_record
from evalrelay.bridge.results.retention import (
    DELETE_CHUNK,
    RETENTION_SECONDS,
    compact,
    is_compacted,
    record_keys,
    remove_jobs,
)


class Collected(BaseModel):
    """What one `gc` removed."""

    campaigns: int = 0
    """Past their retention, or forgotten by Redis already (their metadata expired)."""
    compacted: int = 0
    """Complete, and compacted here: no collector had done it."""
    jobs: int = 0
    """Per-job keys (a stored job, a `done` mark) whose campaign is gone."""


def collect_garbage(client: redis.Redis, retention_seconds: int = RETENTION_SECONDS) -> Collected:
    removed = Collected()
    cutoff = now_seconds(client) - retention_seconds
    listed = cast(list[tuple[str, float]], client.zrange(campaigns_key(), 0, -1, withscores=True))
    kept = []
    for campaign_id, created in listed:
        if created < cutoff or not client.exists(campaign_key(campaign_id)):
            remove_campaign(client, campaign_id)
            removed.campaigns += 1
        else:
            kept.append(campaign_id)
    for campaign_id in kept:
        if is_compacted(client, campaign_id):  # a late acknowledgement may have made these
            client.delete(collected_key(campaign_id), *manifest_record(campaign_id))
    finished = [c for c, p in progress_many(client, kept).items() if p.finished]
    for campaign_id, holder in collectors_of(client, finished).items():
        if holder is None and not is_compacted(client, campaign_id):
            empty_stream(client, campaign_id)
            compact(client, campaign_id)
            removed.compacted += 1
    removed.jobs = remove_orphans(client)
    return removed


def remove_campaign(client: redis.Redis, campaign_id: str) -> None:
    remove_jobs(client, campaign_id, listed_ids(client, campaign_id))
    client.delete(
        *record_keys(campaign_id),
        *manifest_record(campaign_id),
        collected_key(campaign_id),
        checkpoint_key(campaign_id),
        rebuild_lock_key(campaign_id),
        job_dictionary_key(campaign_id),
    )
    client.zrem(campaigns_key(), campaign_id)


STORING_SECONDS = 3600
"""How long a campaign's jobs may be stored before it is announced: a submitter storing a
large campaign now is not a campaign gone. Keys of an unknown campaign written (their time
to live set) more recently than this are left alone."""


def remove_orphans(client: redis.Redis) -> int:
    """Stored jobs, job lists and job dictionaries of campaigns Redis does not know (their
    submitter killed while storing them, or their campaign gone). A `done` mark is left to
    its time to live: one whose job is no longer stored may be a job collected `ok` in a
    running campaign (`bridge.results.collected.count`), which it keeps from running again."""
    removed = 0
    jobs = client.scan_iter(match=job_key("*"), count=DELETE_CHUNK)
    for chunk in _chunked(jobs):
        options: dict[str, Any] = {NEVER_DECODE: []}
        raws = cast(list[bytes | None], client.execute_command("MGET", *chunk, **options))  # type: ignore[no-untyped-call]
        owners = {k: campaign_of(raw) for k, raw in zip(chunk, raws, strict=True)}
        known = _known(client, {c for c in owners.values() if c})
        gone = _settled(client, [k for k, c in owners.items() if c not in known])
        if gone:
            client.delete(*gone)
            removed += len(gone)
    removed += _remove_job_lists(client)
    return removed


def _remove_job_lists(client: redis.Redis) -> int:
    """The manifests (their hashes and count) and job dictionaries of campaigns Redis does
    not know."""
    removed = 0
    kinds = ((manifest_prefix, "*"), (listed_key, ""), (job_dictionary_key, ""))
    for key_of, bucket in kinds:
        start, end = key_of("\0").split("\0")
        match = key_of("*") + bucket
        keys = [str(k) for k in client.scan_iter(match=match, count=DELETE_CHUNK)]
        campaigns = {k: k[len(start) : k.rindex(end)] for k in keys}
        known = _known(client, set(campaigns.values()))
        gone = _settled(client, [k for k, c in campaigns.items() if c not in known])
        if gone:
            client.delete(*gone)
            removed += len(gone)
    return removed


def _settled(client: redis.Redis, keys: list[str]) -> list[str]:
    """The keys written (their time to live set) more than `STORING_SECONDS` ago."""
    pipe = client.pipeline(transaction=False)
    for key in keys:
        pipe.ttl(key)
    ttls = pipe.execute() if keys else []
    return [
        k for k, ttl in zip(keys, ttls, strict=True) if ttl < RETENTION_SECONDS - STORING_SECONDS
    ]


def _known(client: redis.Redis, campaign_ids: set[str]) -> set[str]:
    ids = sorted(campaign_ids)
    pipe = client.pipeline(transaction=False)
    for campaign_id in ids:
        pipe.exists(campaign_key(campaign_id))
    return {c for c, there in zip(ids, pipe.execute(), strict=True) if there}


def _chunked(keys: Iterable[str]) -> list[list[str]]:
    """The keys of a scan, `DELETE_CHUNK` at a time (all read before any is deleted)."""
    found = [str(k) for k in keys]
    return [found[i : i + DELETE_CHUNK] for i in range(0, len(found), DELETE_CHUNK)]

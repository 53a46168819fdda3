"""What Redis keeps of a campaign once its file is complete: a compact record.

While a campaign runs, Redis holds each job (to send it again), its id in the manifest
and in `collected`, and its `done` mark: kept after the campaign, for a million cases
more memory than a small Redis has (docs/performance.md has the bytes per case). Once
the campaign's file holds every result, none of that is needed: what the commands still
ask of Redis is the campaign's metadata, its counts by status, and where its results
file is. Compacting keeps exactly those (for `RETENTION_SECONDS`) and removes the rest.
A command that runs jobs of a compacted campaign again (`retry`) reopens it first
(`reopen`): its record of collected jobs is read back from the file, and its jobs are
planned again from its eval files.
"""

from __future__ import annotations

import os
import time
from collections import Counter
from collections.abc import Iterable
from pathlib import Path
from typing import cast

import redis
from pydantic import BaseModel, ConfigDict, ValidationError

from evalrelay.bridge.keys import (
    audit_key,
    budget_key,
    campaign_key,
    cancel_key,
    checkpoint_key,
    collected_key,
    compacted_key,
    counts_key,
    done_key,
    job_dictionary_key,
    job_key,
    paid_again_key,
    paused_key,
    results_home_key,
    results_stream_key,
)
from evalrelay.bridge.results.manifest import listed_ids, manifest_record
from evalrelay.bridge.results.results_file import read_results

RETENTION_SECONDS = int(float(os.environ.get("EVALRELAY_RETENTION_DAYS", "30")) * 86400)
"""How long Redis keeps a campaign (its record once complete; its jobs while it is not),
from `EVALRELAY_RETENTION_DAYS`; `evalrelay gc` removes what is older."""

DELETE_CHUNK = 1000
"""Keys deleted in one round trip."""


def record_keys(campaign_id: str) -> list[str]:
    """The keys of a compacted campaign's record: kept for `RETENTION_SECONDS`."""
    return [
        campaign_key(campaign_id),
        compacted_key(campaign_id),
        counts_key(campaign_id),
        results_home_key(campaign_id),
        results_stream_key(campaign_id),  # empty; its consumer group serves a `retry`
        audit_key(campaign_id),
        budget_key(campaign_id),
        cancel_key(campaign_id),
        paused_key(campaign_id),
        paid_again_key(campaign_id),
    ]


class CompactRecord(BaseModel):
    """What the compacted mark holds: the campaign's results by status, as its file has
    them. The live `counts` may still move after (an acknowledgement of a collector cut
    off, delivered late, counts its results a second time); this does not."""

    model_config = ConfigDict(extra="forbid")

    at: float
    counts: dict[str, int]


def compact(client: redis.Redis, campaign_id: str, counts: dict[str, int] | None = None) -> int:
    """Keep the campaign's record, remove its jobs and per-job keys; returns how many jobs.
    `counts`: the file's results by status (else Redis's counts are taken as they are).

    The mark goes first: from then on progress is read from it, so `status` never sees a
    complete campaign as unfinished while its sets go."""
    if counts is None:
        counts = compacted_counts(client, campaign_id)
    record = CompactRecord(at=time.time(), counts={k: v for k, v in counts.items() if v})
    pipe = client.pipeline(transaction=True)
    pipe.set(compacted_key(campaign_id), record.model_dump_json(), ex=RETENTION_SECONDS)
    pipe.delete(counts_key(campaign_id))
    if record.counts:
        pipe.hset(counts_key(campaign_id), mapping=dict(record.counts.items()))
    for key in record_keys(campaign_id):
        pipe.expire(key, RETENTION_SECONDS)
    pipe.delete(checkpoint_key(campaign_id))
    pipe.execute()
    removed = remove_jobs(client, campaign_id, listed_ids(client, campaign_id))
    client.delete(
        *manifest_record(campaign_id), collected_key(campaign_id), job_dictionary_key(campaign_id)
    )
    return removed


def remove_jobs(client: redis.Redis, campaign_id: str, job_ids: Iterable[str]) -> int:
    """Each of the campaign's jobs' stored JSON and its `done` mark (the hashes of them)."""
    removed, chunk = 0, []
    for job_id in job_ids:
        chunk.append(job_id)
        if len(chunk) >= DELETE_CHUNK:
            removed += _remove(client, campaign_id, chunk)
            chunk = []
    return removed + _remove(client, campaign_id, chunk)


def _remove(client: redis.Redis, campaign_id: str, job_ids: list[str]) -> int:
    if job_ids:
        marks = {done_key(campaign_id, j) for j in job_ids}
        client.delete(*[job_key(j) for j in job_ids], *marks)
    return len(job_ids)


def is_compacted(client: redis.Redis, campaign_id: str) -> bool:
    return bool(client.exists(compacted_key(campaign_id)))


def compact_record(raw: str | None) -> CompactRecord | None:
    """The compacted mark's record (None when not compacted, or unreadable)."""
    try:
        return CompactRecord.model_validate_json(raw) if raw else None
    except ValidationError:
        return None


def reopen(client: redis.Redis, campaign_id: str, path: Path) -> None:
    """Make a compacted campaign's record per job again, from its results file, so that
    jobs of it may run again: `collected` and `counts` say what the file holds."""
    if not is_compacted(client, campaign_id):
        return
    statuses = {r.job_id: r.status.value for r in read_results(path)}
    ids = list(statuses)
    pipe = client.pipeline(transaction=True)
    pipe.delete(counts_key(campaign_id), collected_key(campaign_id))
    for status, number in Counter(statuses.values()).items():
        pipe.hincrby(counts_key(campaign_id), status, number)
    for start in range(0, len(ids), DELETE_CHUNK):
        pipe.sadd(collected_key(campaign_id), *ids[start : start + DELETE_CHUNK])
    pipe.delete(compacted_key(campaign_id))
    pipe.execute()


def compacted_counts(client: redis.Redis, campaign_id: str) -> dict[str, int]:
    raw = cast(dict[str, str], client.hgetall(counts_key(campaign_id)))
    return {k: int(v) for k, v in raw.items()}

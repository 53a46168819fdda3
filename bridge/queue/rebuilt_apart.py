"""Rebuilding a lost campaign in two halves, on the two hosts that each keep one.

A campaign Redis lost is rebuilt from its eval files (which jobs there were) and its
results file (which of them have their line) (`bridge.queue.rebuild`). In a cluster the
two are often on different hosts: the submitter keeps the eval files, the host of the
`collect` service the results file and the campaign's record beside it. Each half is
done where its files are:

- where the results file is (`restore_from_results`: the `collect` service, or `resume
  PATH`), the campaign is made known again with the results it kept, marked as lacking
  its jobs (`Rebuilt.needs_eval_files`); `status` then says so on every host, and what to
  run;
- where the eval files are (`send_planned`: `resume CAMPAIGN`), its jobs are planned
  again and only those without a line are sent.

Neither half sends a job that has its line, so a finished job is not paid for twice.
"""

from __future__ import annotations

import uuid
from datetime import UTC, datetime
from pathlib import Path

import redis

from evalrelay.bridge.clock import now_seconds
from evalrelay.bridge.contract.job import Job
from evalrelay.bridge.errors import EvalrelayError
from evalrelay.bridge.keys import campaign_key, collected_key, rebuild_lock_key
from evalrelay.bridge.lua_scripts import release_lock
from evalrelay.bridge.queue.campaigns import (
    WRITE_CHUNK,
    CampaignInfo,
    Rebuilt,
    announce,
    load_info,
    store_jobs,
)
from evalrelay.bridge.queue.celery_queue import JobQueue
from evalrelay.bridge.queue.rebuild import REBUILD_LOCK_SECONDS, replan
from evalrelay.bridge.results.collected import count
from evalrelay.bridge.results.results_file import read_results


def eval_files_here(info: CampaignInfo) -> bool:
    """Whether this host has the campaign's eval files, where it was planned from."""
    if info.plan is None:
        return False
    base = Path(info.plan.cwd or Path.cwd())
    return all((base / source).is_file() for source in info.sources)


def restore_from_results(
    client: redis.Redis, info: CampaignInfo, results: Path, by: str
) -> int | None:
    """Make the campaign known again from its record and its results file, without its
    jobs: the results kept count as collected. Returns how many; None when Redis knows the
    campaign already (another process rebuilt it first)."""
    statuses = {r.job_id: r.status.value for r in read_results(results)}
    at = datetime_now(client)
    rebuilt = Rebuilt(at=at, kept=len(statuses), sent=0, by=by, needs_eval_files=True)
    lock, token = rebuild_lock_key(info.campaign_id), uuid.uuid4().hex
    if not client.set(lock, token, nx=True, ex=REBUILD_LOCK_SECONDS):
        return None
    try:
        if client.exists(campaign_key(info.campaign_id)):
            return None
        count(client, info.campaign_id, statuses, sign=1)
        announce(client, info.model_copy(update={"rebuilt": rebuilt}), [])
    finally:
        release_lock(client, lock, token)
    return len(statuses)


def needs_jobs(client: redis.Redis, campaign_id: str) -> bool:
    """Whether the campaign was rebuilt without its jobs, which nobody has sent since."""
    raw = client.get(campaign_key(campaign_id))
    if raw is None:
        return False
    rebuilt = CampaignInfo.model_validate_json(raw).rebuilt
    return rebuilt is not None and rebuilt.needs_eval_files


def send_planned(
    client: redis.Redis, queue: JobQueue, campaign_id: str, by: str
) -> list[Job] | None:
    """Plan again, from its eval files here, the jobs of a campaign rebuilt without them,
    and send those without a line: the jobs sent. None when another process did first."""
    lock, token = rebuild_lock_key(campaign_id), uuid.uuid4().hex
    if not client.set(lock, token, nx=True, ex=REBUILD_LOCK_SECONDS):
        return None
    try:
        if not needs_jobs(client, campaign_id):
            return None
        info = load_info(client, campaign_id)
        if not eval_files_here(info):
            raise EvalrelayError(
                f"campaign {campaign_id} lost its jobs with Redis's data, and its eval files "
                f"({', '.join(info.sources)} in {info.plan.cwd if info.plan else '?'}) are not "
                "on this host: run `evalrelay resume` on the host that has them"
            )
        files, jobs = replan(info)
        done = set(client.smembers(collected_key(campaign_id)))
        missing = [job for job in jobs if job.job_id not in done]
        for start in range(0, len(jobs), WRITE_CHUNK):
            store_jobs(client, jobs[start : start + WRITE_CHUNK])
        assert info.rebuilt is not None  # `needs_jobs`
        rebuilt = info.rebuilt.model_copy(
            update={"sent": len(missing), "needs_eval_files": False, "by": by}
        )
        updated = info.model_copy(update={"rebuilt": rebuilt})
        announced_ms = announce(client, updated, files, missing)
        for start in range(0, len(missing), WRITE_CHUNK):
            queue.send(missing[start : start + WRITE_CHUNK], announced_ms=announced_ms)
    finally:
        release_lock(client, lock, token)
    return missing


def datetime_now(client: redis.Redis) -> datetime:
    """Redis's time, as `Rebuilt.at` holds it."""
    return datetime.fromtimestamp(now_seconds(client), UTC)

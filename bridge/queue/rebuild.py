"""Rebuilding a campaign that Redis lost, from what survives it: the eval files and the
results file.

A Redis restarted without its data (no persistence, a managed service that evicted keys,
a failover to an empty replica) forgets every campaign, job and result stream. The eval
files still say which jobs there were (job ids are derived from the campaign, case,
target and repeat), and the results file says which of them have their line; so the
campaign is planned again as it was first planned, and only the jobs without a line are
sent. A marker key (`epoch_key`) that a restarted empty Redis lacks tells every command
that this happened, instead of leaving a campaign to wait for ever.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterable
from pathlib import Path
from typing import NamedTuple

import redis
from pydantic import BaseModel, ConfigDict, ValidationError

from bridge.errors import EvalrelayError
from bridge.evalfile.cases import LoadedEvalFile, load_eval_file
from bridge.evalfile.selection import select_cases
from bridge.keys import epoch_key
from bridge.queue.campaigns import WRITE_CHUNK, CampaignInfo, announce, plan_jobs, store_jobs
from bridge.queue.celery_queue import JobQueue
from bridge.queue.jobs import Job
from bridge.results.results_file import read_results, results_path

RECORD_SUFFIX = ".campaign.json"
"""Beside the results file, `<campaign>.campaign.json`: the campaign and its plan."""


class CampaignRecord(BaseModel):
    """What a campaign's results folder keeps of it, to rebuild it without Redis."""

    model_config = ConfigDict(extra="forbid")

    info: CampaignInfo

    @property
    def campaign_id(self) -> str:
        return self.info.campaign_id


def record_path(out_dir: Path, campaign_id: str) -> Path:
    return out_dir / f"{campaign_id}{RECORD_SUFFIX}"


def write_record(info: CampaignInfo) -> Path:
    """Keep the campaign beside where its results go (the folder is made if needed)."""
    path = record_path(Path(info.out_dir), info.campaign_id)
    path.parent.mkdir(parents=True, exist_ok=True)
    temporary = path.with_name(path.name + ".tmp")
    temporary.write_text(CampaignRecord(info=info).model_dump_json(indent=2) + "\n")
    temporary.replace(path)
    return path


def read_record(path: Path) -> CampaignRecord:
    try:
        return CampaignRecord.model_validate_json(path.read_text(encoding="utf-8"))
    except (OSError, ValidationError) as exc:
        raise EvalrelayError(f"{path}: not a campaign record evalrelay can read ({exc})") from None


def find_record(text: str, search: Iterable[Path]) -> Path | None:
    """The record a user means: a path to it, to the results file beside it, or a
    campaign id whose record is in one of the `search` folders."""
    given = Path(text)
    if given.name.endswith(".jsonl"):
        given = given.with_name(given.name.removesuffix(".jsonl") + RECORD_SUFFIX)
    if given.name.endswith(RECORD_SUFFIX):
        return given if given.is_file() else None
    for folder in search:
        candidate = record_path(folder, text)
        if candidate.is_file():
            return candidate
    return None


def current_epoch(client: redis.Redis) -> str:
    """This Redis's mark, made now if missing: a long-lived process that saw another one
    knows Redis lost its data since (whoever noticed first made a new mark)."""
    pipe = client.pipeline(transaction=False)
    pipe.set(epoch_key(), uuid.uuid4().hex, nx=True)
    pipe.get(epoch_key())
    return str(pipe.execute()[1])


def replan(info: CampaignInfo) -> tuple[list[LoadedEvalFile], list[Job]]:
    """The campaign's files and jobs, planned again as they were first planned; an error
    when the files no longer give the same jobs."""
    plan = info.plan
    if plan is None:
        raise EvalrelayError(
            f"campaign {info.campaign_id} was started by an older evalrelay that kept no plan "
            "of it; run its eval files again as a new campaign"
        )
    files = select_cases([load_eval_file(Path(s)) for s in info.sources], plan.cases, plan.tags)
    jobs = plan_jobs(
        info.campaign_id, files, plan.targets, plan.repeats, fallback_target=plan.fallback_target
    )
    if plan.cache_ttl_seconds:
        jobs = [j.model_copy(update={"cache_ttl_seconds": plan.cache_ttl_seconds}) for j in jobs]
    if len(jobs) != info.total:
        raise EvalrelayError(
            f"campaign {info.campaign_id} had {info.total} jobs; its eval files now give "
            f"{len(jobs)} ({', '.join(info.sources)} changed): run them as a new campaign"
        )
    return files, jobs


def rebuild(
    client: redis.Redis, queue: JobQueue, info: CampaignInfo, done: Iterable[str]
) -> list[Job]:
    """Make the campaign known again and send its jobs that have no line (`done`: the job
    ids the results file holds); the jobs sent."""
    files, jobs = replan(info)
    have = set(done)
    unknown = have - {j.job_id for j in jobs}
    if unknown:
        raise EvalrelayError(
            f"the results file of {info.campaign_id} holds {len(unknown)} jobs its eval files "
            "no longer give; they changed since it started: run them as a new campaign"
        )
    missing = [j for j in jobs if j.job_id not in have]
    for start in range(0, len(jobs), WRITE_CHUNK):
        store_jobs(client, jobs[start : start + WRITE_CHUNK])
    announce(client, info, files, missing)
    queue.send(missing)  # `announce` marked this Redis as holding campaigns again
    return missing


class LostCampaign(NamedTuple):
    """A campaign a results folder keeps but Redis does not: Redis lost its data."""

    info: CampaignInfo
    lines: int
    folder: Path

    def __str__(self) -> str:
        campaign = self.info.campaign_id
        return (
            f"campaign {campaign} ({self.lines} of {self.info.total} results in "
            f"{self.folder}) is not in this Redis: it lost its data (restarted empty, or "
            f"evicted keys). `evalrelay resume {campaign}` rebuilds it and sends the rest."
        )


def lost_campaigns(folder: Path, known: Iterable[str]) -> list[LostCampaign]:
    """The unfinished campaigns whose record is in `folder` and whose id is not `known`."""
    if not folder.is_dir():
        return []
    found, known = [], set(known)
    for path in sorted(folder.glob(f"*{RECORD_SUFFIX}")):
        info = read_record(path).info
        lines = sum(1 for _ in read_results(results_path(folder, info.campaign_id)))
        if info.campaign_id not in known and lines < info.total:
            found.append(LostCampaign(info, lines, folder))
    return found

"""Rebuilding a campaign that Redis lost, from what survives it: the eval files and the
results file.

A Redis restarted without its data (no persistence, a managed service that evicted keys,
a failover to an empty replica) forgets every campaign, job and result stream. The eval
files still say which jobs there were (job ids are derived from the campaign, case,
target and repeat), and the results file says which of them have their line; so the
campaign is planned again as it was first planned, and only the jobs without a line are
sent. A marker key (`epoch_key`) that a restarted empty Redis lacks tells every command
that this happened, instead of leaving a campaign to wait for ever.

A campaign dropped in a watcher's inbox is rebuilt by a watcher of that inbox only: its
record names the copy of the file in `queued/`, which is untrusted, and only the watcher
loads it as it was first loaded (bounded, with the operator's configuration).
"""

from __future__ import annotations

import uuid
from collections.abc import Iterable, Iterator, Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import NamedTuple

import redis
from pydantic import BaseModel, ConfigDict, ValidationError

from evalrelay.bridge.clock import now_seconds
from evalrelay.bridge.contract.job import Job
from evalrelay.bridge.errors import EvalrelayError
from evalrelay.bridge.evalfile.cases import LoadedEvalFile, load_eval_file
from evalrelay.bridge.evalfile.project import Project
from evalrelay.bridge.evalfile.selection import select_cases
from evalrelay.bridge.keys import campaign_key, rebuild_lock_key
from evalrelay.bridge.lua_scripts import release_lock
from evalrelay.bridge.planning.campaigns import plan_jobs
from evalrelay.bridge.queue.campaigns import (
    WRITE_CHUNK,
    CampaignInfo,
    Rebuilt,
    announce,
    store_jobs,
)
from evalrelay.bridge.queue.celery_queue import JobQueue
from evalrelay.bridge.queue.regrade import plan_regrade
from evalrelay.bridge.results.results_file import job_ids_on_disk, read_results, results_path

RECORD_SUFFIX = ".campaign.json"
"""Beside the results file, `<campaign>.campaign.json`: the campaign and its plan."""


REBUILD_LOCK_SECONDS = 300
"""How long one process may take to rebuild a campaign before another may try."""


class DroppedFile(BaseModel):
    """Where a campaign dropped in an inbox has its file: a watcher of that inbox rebuilds
    the campaign from the copy in `queued/`, with the watcher's own configuration."""

    model_config = ConfigDict(extra="forbid")

    inbox: str
    """The inbox folder, absolute."""
    path: str
    """Where the file was dropped, relative to the inbox: its project, its target folder
    and (when it names none) its dataset name come from there."""
    queued: str
    """Where the file waits for its campaign to end, relative to the inbox (`queued/...`)."""
    identity: str
    """The hash of the file's content and target folder (`bridge.inbox.intake`): a copy
    changed since it was queued is not rebuilt from."""

    def queued_path(self) -> Path:
        return Path(self.inbox) / self.queued


class CampaignRecord(BaseModel):
    """What a campaign's results folder keeps of it, to rebuild it without Redis."""

    model_config = ConfigDict(extra="forbid")

    info: CampaignInfo
    dropped: DroppedFile | None = None
    """Set for a campaign dropped in a watcher's inbox."""

    @property
    def campaign_id(self) -> str:
        return self.info.campaign_id


def record_path(out_dir: Path, campaign_id: str) -> Path:
    return out_dir / f"{campaign_id}{RECORD_SUFFIX}"


def write_record(info: CampaignInfo, dropped: DroppedFile | None = None) -> Path:
    """Keep the campaign beside where its results go (the folder is made if needed)."""
    path = record_path(Path(info.out_dir), info.campaign_id)
    path.parent.mkdir(parents=True, exist_ok=True)
    temporary = path.with_name(path.name + ".tmp")
    record = CampaignRecord(info=info, dropped=dropped)
    temporary.write_text(record.model_dump_json(indent=2, exclude_none=True) + "\n")
    temporary.replace(path)
    return path


def records_in(folder: Path) -> Iterator[CampaignRecord]:
    """Every campaign record in `folder`; one that cannot be read is passed over (a
    process writing the folder keeps only its own there, but a person may not)."""
    if not folder.is_dir():
        return
    for path in sorted(folder.glob(f"*{RECORD_SUFFIX}")):
        try:
            yield read_record(path)
        except EvalrelayError:
            continue


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


def record_of(text: str, unknown: EvalrelayError) -> CampaignRecord:
    """The record of a campaign this Redis does not know by `text` (its id, or the path of
    its results file), beside its results; else the error that it is unknown (which says
    when this Redis holds no evalrelay data at all). Its results are where it was found,
    whatever folder the record names: a copy moved to another folder or host is kept."""
    folders = [Path.cwd() / "results", Project.containing(Path.cwd()).results_dir]
    found = find_record(text, folders)
    if found is None:
        raise unknown
    record = read_record(found)
    here = record.info.model_copy(update={"out_dir": str(found.parent.absolute())})
    return record.model_copy(update={"info": here})


def replan(info: CampaignInfo) -> tuple[list[LoadedEvalFile], list[Job]]:
    """The campaign's files and jobs, planned again as they were first planned; an error
    when the files no longer give the same jobs."""
    if info.collector == "watch":
        raise EvalrelayError(
            f"campaign {info.campaign_id} was dropped in a watcher's inbox: only a watcher of "
            "that inbox rebuilds it (from its file in queued/, with the watcher's own "
            "configuration); start `evalrelay watch INBOX` there"
        )
    plan = info.plan
    if plan is None:
        raise EvalrelayError(
            f"campaign {info.campaign_id} has no plan on record to rebuild it from; run its "
            "eval files again as a new campaign"
        )
    base = Path(plan.cwd or Path.cwd())
    files = select_cases([load_eval_file(base / s) for s in info.sources], plan.cases, plan.tags)
    if plan.regrades:  # the answers it grades are read again from their results file
        jobs = plan_regrade(info.campaign_id, files, read_results(Path(plan.regrades))).jobs
    else:
        jobs = plan_jobs(
            info.campaign_id,
            files,
            plan.targets,
            plan.repeats,
            fallback_target=plan.fallback_target,
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
    client: redis.Redis, queue: JobQueue, info: CampaignInfo, done: Iterable[str], by: str
) -> list[Job] | None:
    """Plan the campaign again from its eval files and `restore` it."""
    files, jobs = replan(info)
    return restore(client, queue, info, files, jobs, done, by)


def restore(
    client: redis.Redis,
    queue: JobQueue,
    info: CampaignInfo,
    files: Sequence[LoadedEvalFile],
    jobs: Sequence[Job],
    done: Iterable[str],
    by: str,
) -> list[Job] | None:
    """Make the campaign, planned again as `files` and `jobs`, known again, and send its
    jobs that have no line (`done`: the job ids its results file holds): the jobs sent.
    None when Redis knows the campaign: another process (a second watcher of the inbox, a
    `resume` by hand) rebuilt it first, and sending them again would run them twice."""
    have = set(done)
    unknown = have - {j.job_id for j in jobs}
    if unknown:
        raise EvalrelayError(
            f"the results file of {info.campaign_id} holds {len(unknown)} jobs its eval files "
            "no longer give; they changed since it started: run them as a new campaign"
        )
    lock, token = rebuild_lock_key(info.campaign_id), uuid.uuid4().hex
    if not client.set(lock, token, nx=True, ex=REBUILD_LOCK_SECONDS):
        return None
    try:
        if client.exists(campaign_key(info.campaign_id)):
            return None
        missing = [j for j in jobs if j.job_id not in have]
        for start in range(0, len(jobs), WRITE_CHUNK):
            store_jobs(client, jobs[start : start + WRITE_CHUNK])
        at = datetime.fromtimestamp(now_seconds(client), UTC)
        rebuilt = Rebuilt(at=at, kept=len(have), sent=len(missing), by=by)
        announced_ms = announce(
            client, info.model_copy(update={"rebuilt": rebuilt}), files, missing
        )
        for start in range(0, len(missing), WRITE_CHUNK):
            queue.send(missing[start : start + WRITE_CHUNK], announced_ms=announced_ms)
    finally:
        release_lock(client, lock, token)
    return missing


class LostCampaign(NamedTuple):
    """A campaign a results folder keeps but Redis does not: Redis lost its data."""

    record: CampaignRecord
    lines: int
    folder: Path

    def __str__(self) -> str:
        campaign, dropped = self.record.campaign_id, self.record.dropped
        lost = (
            f"campaign {campaign} ({self.lines} of {self.record.info.total} results in "
            f"{self.folder}) is not in this Redis: it lost its data (restarted empty, or "
            "evicted keys)."
        )
        if dropped is not None:
            return (
                f"{lost} A watcher of {dropped.inbox} rebuilds it from "
                f"{dropped.queued_path()} and sends the rest; start `evalrelay watch "
                f"{dropped.inbox}` if none runs."
            )
        return f"{lost} `evalrelay resume {campaign}` rebuilds it and sends the rest."


def lost_campaigns(folder: Path, known: Iterable[str]) -> list[LostCampaign]:
    """The unfinished campaigns whose record is in `folder` and whose id is not `known`."""
    found, known = [], set(known)
    for record in records_in(folder):
        if record.campaign_id in known:
            continue
        lines = len(job_ids_on_disk(results_path(folder, record.campaign_id)))
        if lines < record.info.total:
            found.append(LostCampaign(record, lines, folder))
    return found

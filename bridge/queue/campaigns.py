"""Campaigns: a set of jobs submitted together, with a manifest of the results expected.

The manifest (job ids) and every job's JSON live in Redis while the campaign runs, so any
process can tell what is missing (`resume`), send a job again (the reaper) or show
progress (`status`); once it is complete, a compact record stays
(`bridge.results.retention`).
"""

from __future__ import annotations

import difflib
import re
import secrets
import uuid
from collections.abc import Callable, Iterable, Iterator, Sequence
from datetime import UTC, datetime
from typing import Literal, Protocol, TypeVar

import redis
from pydantic import BaseModel, ConfigDict, Field

from evalrelay.bridge.contract.campaign_state import JOB_TTL_SECONDS
from evalrelay.bridge.contract.job import Job
from evalrelay.bridge.contract.stored import encoded, read_jobs
from evalrelay.bridge.delivery.outstanding import ids_by_queue, mark_sent, not_sent
from evalrelay.bridge.errors import EvalrelayError
from evalrelay.bridge.evalfile.harbor.folder import LoadedTask
from evalrelay.bridge.evalfile.resolved import ResolvedFile
from evalrelay.bridge.gc_pause import gc_paused
from evalrelay.bridge.keys import (
    campaign_key,
    campaigns_key,
    collected_key,
    compacted_key,
    counts_key,
    epoch_key,
    job_key,
    listed_key,
)
from evalrelay.bridge.lua_scripts import STORE_JOBS
from evalrelay.bridge.queue.blobs import store_blobs, store_task_files
from evalrelay.bridge.queue.celery_queue import JobQueue
from evalrelay.bridge.results.manifest import list_jobs, listed_ids
from evalrelay.bridge.results.retention import compact_record

WRITE_CHUNK = 1000

LATEST = "latest"
"""What a user types for the most recently created campaign, wherever an id is taken."""

MAX_CANDIDATES = 8

CLOSE_ID = 0.85
"""Ids of one day share most characters: only a typo or two away counts as close."""

T = TypeVar("T")


class SubmittedCase(Protocol):
    def files(self) -> list[ResolvedFile]: ...


class SubmittedFile(Protocol):
    """What sending a campaign reads of a loaded eval file
    (`bridge.evalfile.cases.LoadedEvalFile`): its dataset's name, the files its cases
    attach, its container task. Named by what is read, so that the queue, which the worker
    imports, imports no eval-file loader."""

    @property
    def dataset(self) -> str: ...

    @property
    def cases(self) -> Sequence[SubmittedCase]: ...

    @property
    def task(self) -> LoadedTask | None: ...


class AmbiguousCampaign(EvalrelayError):
    """What a user typed is the start of several campaign ids."""


class Plan(BaseModel):
    """How a campaign's jobs were planned from its eval files: enough to plan the same jobs
    again (`bridge.queue.rebuild`) when Redis has lost them."""

    model_config = ConfigDict(extra="forbid")

    targets: list[str] = Field(default_factory=list)
    """`--target`, one or several."""
    repeats: int | None = None
    cases: list[str] = Field(default_factory=list)
    """`--case` patterns."""
    tags: list[str] = Field(default_factory=list)
    fallback_target: str | None = None
    """The inbox folder's or the watcher's target."""
    cache_ttl_seconds: int | None = None
    regrades: str | None = None
    """The results file whose recorded answers this campaign grades again (`regrade`)."""
    cwd: str | None = None
    """The folder `run` was started in: the campaign's `sources` as given (maybe relative,
    as annotations want them) are read from there when a `collect` service rebuilds it."""


class Rebuilt(BaseModel):
    """A campaign Redis lost (it restarted without its data) that was made known again from
    its eval files and results file (`bridge.queue.rebuild`): what `status` says of it."""

    model_config = ConfigDict(extra="forbid")

    at: datetime
    """On Redis's clock."""
    kept: int
    """Results its file held, kept."""
    sent: int
    """Jobs without a line, sent again."""
    by: str
    """The command that rebuilt it: `run`, `resume`, `collect`, or a watcher's name."""
    needs_eval_files: bool = False
    """Rebuilt from its results file alone, on a host without its eval files: its record and
    the results kept are known again, its jobs are not. `evalrelay resume` on the host of
    its eval files plans them again and sends the ones without a line."""


class CampaignInfo(BaseModel):
    model_config = ConfigDict(extra="forbid")

    campaign_id: str
    created_at: datetime
    sources: list[str]
    targets: list[str]
    total: int
    out_dir: str
    collector: Literal["run", "service", "watch"] = "run"
    """Who writes the results: the `run` that submitted it, the `collect` service, or the
    watchers of the inbox it was dropped in."""
    queues: list[str] = Field(default_factory=list)
    """The queues its jobs go to, so a command can say when no live worker serves one."""
    name: str | None = None
    """The name given with `run --name`: commands take it for the latest campaign of that
    name, as they take `latest` for the latest of all."""
    plan: Plan | None = None
    rebuilt: Rebuilt | None = None
    """Set when Redis lost the campaign and it was rebuilt; the latest rebuild."""

    @classmethod
    def for_jobs(
        cls,
        campaign_id: str,
        jobs: Sequence[Job],
        sources: Sequence[str],
        out_dir: str,
        collector: Literal["run", "service", "watch"],
        name: str | None = None,
        plan: Plan | None = None,
    ) -> CampaignInfo:
        return cls(
            campaign_id=campaign_id,
            created_at=datetime.now(UTC),
            sources=list(sources),
            targets=sorted({j.target.name for j in jobs}),
            total=len(jobs),
            out_dir=out_dir,
            collector=collector,
            queues=sorted({j.target.queue for j in jobs}),
            name=name,
            plan=plan,
        )


class Progress(BaseModel):
    total: int
    done: int
    counts: dict[str, int]
    known: bool = True
    """False when Redis no longer has the campaign: it restarted without its data."""

    @property
    def finished(self) -> bool:
        """Every announced job has its line; never true of a campaign Redis does not know
        (not announced yet, or lost in a restart without its data)."""
        return self.known and self.done >= self.total


def new_campaign_id(files: Sequence[SubmittedFile], name: str | None = None) -> str:
    """`<stem>-<UTC time>-<4 hex>`; the stem is `name` when given, else the dataset's name
    (of a single file), slugified so the id is a file name and a word on a command line."""
    if name is not None and slugify(name) == LATEST:
        raise EvalrelayError(f"'{LATEST}' always means the newest campaign; pick another name")
    stem = name or (files[0].dataset if len(files) == 1 else "campaign")
    return f"{slugify(stem)}-{datetime.now(UTC):%Y%m%d-%H%M%S}-{secrets.token_hex(2)}"


def slugify(text: str) -> str:
    return re.sub(r"[^A-Za-z0-9_.-]+", "-", text).strip("-.")[:40] or "campaign"


@gc_paused()
def submit(
    client: redis.Redis,
    queue: JobQueue,
    info: CampaignInfo,
    jobs: list[Job],
    files: Sequence[SubmittedFile],
    *,
    resuming: bool = False,
    after_chunk: Callable[[], object] = lambda: None,
) -> None:
    """Store every job, then make the campaign known, then queue its jobs.

    A submitter killed while storing leaves no campaign (only jobs nobody asks for, which
    expire); killed while queueing, a campaign whose every job is recorded as sent
    (`announce`), so the reaper sends the ones that never went, without `resume`.
    `resuming` finishes a submission cut short (a watcher killed): the jobs already sent
    are not sent again.
    """
    for chunk in _chunks(jobs, WRITE_CHUNK):
        store_jobs(client, chunk)
        after_chunk()
    unsent = not_sent(client, jobs) if resuming else jobs
    announced_ms = announce(client, info, files, jobs)
    for chunk in _chunks(unsent, WRITE_CHUNK):
        queue.send(chunk, announced_ms=announced_ms)
        after_chunk()


def announce(
    client: redis.Redis,
    info: CampaignInfo,
    files: Sequence[SubmittedFile],
    jobs: Sequence[Job] = (),
) -> int | None:
    """Make the campaign known, with its files and its number of jobs, and record its
    stored `jobs` as sent (`bridge.delivery.outstanding`), in one transaction. Returns the
    time they were recorded at (Redis's, in ms; None without jobs), for their messages."""
    for loaded in files:
        store_blobs(client, (f for case in loaded.cases for f in case.files()))
        if loaded.task is not None:
            store_task_files(client, loaded.task.folder, loaded.task.spec.files)
    pipe = client.pipeline(transaction=True)
    mark_sent(pipe, ids_by_queue(jobs))
    pipe.set(campaign_key(info.campaign_id), info.model_dump_json(), ex=JOB_TTL_SECONDS)
    pipe.zadd(campaigns_key(), {info.campaign_id: info.created_at.timestamp()})
    pipe.set(epoch_key(), uuid.uuid4().hex, nx=True)  # this Redis holds campaigns now
    replies = pipe.execute()
    return int(replies[0]) if jobs else None


def store_jobs(client: redis.Redis, jobs: Sequence[Job]) -> None:
    """Store the jobs (of one campaign), and list them in its manifest."""
    if not jobs:
        return
    values = encoded(client, jobs)
    pipe = client.pipeline(transaction=False)
    campaign_id = jobs[0].campaign_id
    keys = [job_key(job.job_id) for job in jobs]
    stored = [values[job.job_id] for job in jobs]
    pipe.eval(STORE_JOBS, len(keys), *keys, JOB_TTL_SECONDS, *stored)
    list_jobs(pipe, campaign_id, (job.job_id for job in jobs), JOB_TTL_SECONDS)
    pipe.execute()


def load_info(client: redis.Redis, campaign_id: str) -> CampaignInfo:
    raw = client.get(campaign_key(campaign_id))
    if raw is None:
        raise EvalrelayError(
            f"no campaign '{campaign_id}' in this Redis; `evalrelay status` "
            "lists the campaigns it knows"
        )
    return CampaignInfo.model_validate_json(raw)


def list_campaigns(client: redis.Redis, limit: int | None = 20) -> list[CampaignInfo]:
    """The newest campaigns Redis still has, newest first; `limit=None` for all of them."""
    end = -1 if limit is None else limit - 1
    return infos_of(client, [str(i) for i in client.zrevrange(campaigns_key(), 0, end)])


def infos_of(client: redis.Redis, campaign_ids: Sequence[str]) -> list[CampaignInfo]:
    """The campaigns Redis has of `campaign_ids`, in their order; the others left out."""
    raws = [
        raw
        for chunk in _chunks(campaign_ids, WRITE_CHUNK)
        for raw in client.mget([campaign_key(i) for i in chunk])
    ]
    return [CampaignInfo.model_validate_json(raw) for raw in raws if raw]


def resolve_campaign(client: redis.Redis, text: str) -> str:
    """The id of the campaign a user means: `latest` (the newest), an id, a name given to
    `run --name` (its newest campaign), or the start of one id. Typing a whole id is error
    prone; an unknown or ambiguous one is refused naming the closest campaigns."""
    if text != LATEST and client.exists(campaign_key(text)):
        return text
    known = list_campaigns(client, limit=None)
    if not known:
        lost = (
            ""
            if client.exists(epoch_key())
            else "; it holds no evalrelay data at all: it is new, or it restarted without its "
            "data. If the campaign's results file survives, give its path (`evalrelay resume "
            "results/<campaign>.jsonl`) to rebuild the campaign"
        )
        raise EvalrelayError(
            f"no campaign '{text}': this Redis has no campaigns (they are kept "
            f"{JOB_TTL_SECONDS // 86400} days){lost}"
        )
    if text == LATEST:
        return known[0].campaign_id
    named = [i for i in known if i.name is not None and text in (i.name, slugify(i.name))]
    if named:
        return named[0].campaign_id
    starting = [i.campaign_id for i in known if i.campaign_id.startswith(text)]
    if len(starting) == 1:
        return starting[0]
    if starting:
        raise AmbiguousCampaign(
            f"'{text}' starts {len(starting)} campaign ids: {_listed(starting)}; "
            "type more of the id, or `latest`"
        )
    raise EvalrelayError(f"no campaign '{text}' in this Redis; {_closest(text, known)}")


def _closest(text: str, known: Sequence[CampaignInfo]) -> str:
    """Campaigns whose id or name looks like `text`, else the newest ones."""
    ids = [i.campaign_id for i in known]
    by_name = {i.name: i.campaign_id for i in reversed(known) if i.name}
    near = [i for i in ids if text.lower() in i.lower()]
    near += difflib.get_close_matches(text, ids, n=MAX_CANDIDATES, cutoff=CLOSE_ID)
    near += [by_name[n] for n in difflib.get_close_matches(text, list(by_name), cutoff=0.6)]
    near = list(dict.fromkeys(near))
    if near:
        return f"did you mean: {_listed(near)}?"
    return f"the newest: {_listed(ids)} (`evalrelay status --all` lists all)"


def _listed(ids: Sequence[str]) -> str:
    more = f" and {len(ids) - MAX_CANDIDATES} more" if len(ids) > MAX_CANDIDATES else ""
    return ", ".join(ids[:MAX_CANDIDATES]) + more


def progress(client: redis.Redis, campaign_id: str) -> Progress:
    return progress_many(client, [campaign_id])[campaign_id]


def progress_many(client: redis.Redis, campaign_ids: Sequence[str]) -> dict[str, Progress]:
    """Progress of many campaigns in one round trip.

    The total is the number of jobs the campaign announced, not the size of its job list,
    which grows while the campaign is being submitted.
    """
    pipe = client.pipeline(transaction=False)
    for campaign_id in campaign_ids:
        pipe.get(campaign_key(campaign_id))
        pipe.get(listed_key(campaign_id))
        pipe.scard(collected_key(campaign_id))
        pipe.hgetall(counts_key(campaign_id))
        pipe.get(compacted_key(campaign_id))
    replies = pipe.execute()
    found = {}
    for i, campaign_id in enumerate(campaign_ids):
        raw, count, done, counts, compacted = replies[5 * i : 5 * i + 5]
        listed = int(count or 0)
        total = CampaignInfo.model_validate_json(raw).total if raw else listed
        record = compact_record(compacted)
        counted = record.counts if record else {k: int(v) for k, v in counts.items()}
        found[campaign_id] = Progress(
            total=max(total, listed),
            done=sum(counted.values()) if record else done,  # its record, once compacted
            counts=counted,
            known=raw is not None,
        )
    return found


def round_progress(client: redis.Redis, campaign_id: str, job_ids: Sequence[str]) -> Progress:
    """How many of the jobs one command sent again (`resume`, `retry`) have their line. A
    campaign compacted meanwhile has every line in its file, these included (its record
    of which jobs are collected is gone with the rest)."""
    pipe = client.pipeline(transaction=False)
    for chunk in _chunks(list(job_ids), WRITE_CHUNK):
        pipe.smismember(collected_key(campaign_id), list(chunk))
    pipe.hgetall(counts_key(campaign_id))
    pipe.get(compacted_key(campaign_id))
    *found, counts, compacted = pipe.execute()
    record = compact_record(compacted)
    if record is not None:
        return Progress(total=len(job_ids), done=len(job_ids), counts=record.counts)
    done = sum(1 for chunk in found for member in chunk if member)
    return Progress(total=len(job_ids), done=done, counts={k: int(v) for k, v in counts.items()})


def stored_jobs(client: redis.Redis, campaign_id: str) -> Iterator[Job]:
    ids = sorted(listed_ids(client, campaign_id))
    for chunk in _chunks(ids, WRITE_CHUNK):
        yield from (job for job in read_jobs(client, chunk) if job is not None)


def missing_jobs(client: redis.Redis, campaign_id: str) -> list[Job]:
    """The campaign's jobs that have no result in its file yet."""
    collected = client.smembers(collected_key(campaign_id))
    return [job for job in stored_jobs(client, campaign_id) if job.job_id not in collected]


def _chunks(items: Sequence[T], size: int) -> Iterable[Sequence[T]]:
    for start in range(0, len(items), size):
        yield items[start : start + size]

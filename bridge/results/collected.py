"""What Redis knows of a campaign's results file: where it is, and which jobs it holds.

Redis is the record: `collected` (job ids) and `counts` (by status) say what the
campaign's file holds, and `results_home` says which host and path that file is. A
collector opening a campaign's file brings the two into agreement without ever taking
anything out of Redis's record: a file on another host, or a new empty one, is not the
campaign's file until it holds what Redis says is collected. What it lacks it copies
from the result stream and its checkpoint (`bridge.results.checkpoint`), which keep every
result until the campaign's file is complete.
"""

from __future__ import annotations

import logging
import socket
from collections import Counter
from collections.abc import Iterable
from itertools import islice
from pathlib import Path
from typing import Any, cast

import redis
from pydantic import BaseModel, ConfigDict, ValidationError

from evalrelay.bridge.keys import (
    checkpoint_key,
    collected_key,
    counts_key,
    job_key,
    results_home_key,
    results_stream_key,
)
from evalrelay.bridge.results.checkpoint import checkpointed
from evalrelay.bridge.results.result import Result, Status
from evalrelay.bridge.results.results_file import ResultsFile, summary_path
from evalrelay.bridge.results.retention import RETENTION_SECONDS

log = logging.getLogger(__name__)

SCAN_PAGE = 1000
"""Stream entries read at a time when copying results a file lacks."""

HOME_TTL_SECONDS = RETENTION_SECONDS
"""As long as the campaign's record is kept."""

PARTIAL = ".partial-"
"""`<campaign>.partial-<host>.jsonl`: the part a collector wrote before another took the
campaign over; the campaign's file is the one its `results_home` names."""


class ResultsHome(BaseModel):
    """The host and path of a campaign's results file, and the collector writing it."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    host: str
    path: str
    collector: str

    @classmethod
    def here(cls, path: Path, collector: str) -> ResultsHome:
        return cls(host=socket.gethostname(), path=str(path.resolve()), collector=collector)

    def same_file(self, other: ResultsHome) -> bool:
        return (self.host, self.path) == (other.host, other.path)

    def __str__(self) -> str:
        return f"{self.host}:{self.path}"


def results_home(client: redis.Redis, campaign_id: str) -> ResultsHome | None:
    return results_homes(client, [campaign_id])[campaign_id]


def results_homes(client: redis.Redis, campaign_ids: list[str]) -> dict[str, ResultsHome | None]:
    """Each campaign's results home, in one round trip."""
    raws = client.mget([results_home_key(c) for c in campaign_ids]) if campaign_ids else []
    homes: dict[str, ResultsHome | None] = {}
    for campaign_id, raw in zip(campaign_ids, raws, strict=True):
        try:
            homes[campaign_id] = ResultsHome.model_validate_json(raw) if raw else None
        except ValidationError:
            homes[campaign_id] = None
    return homes


def where_results_are(home: ResultsHome | None, out_dir: str) -> str:
    """For people: the file's host and path once a collector has written it."""
    return str(home) if home else f"{out_dir} (no result collected yet)"


def file_here(client: redis.Redis, campaign_id: str, default: Path) -> Path | None:
    """The campaign's results file if it is on this host (`default` while it has none yet),
    or None: then it is on another host, and only its `results_home` says where."""
    return local_file(results_home(client, campaign_id), default)


def local_file(home: ResultsHome | None, default: Path) -> Path | None:
    """`file_here`, of a home already read."""
    if home is None:
        return default
    return Path(home.path) if home.host == socket.gethostname() else None


def home_elsewhere(client: redis.Redis, campaign_id: str, path: Path) -> ResultsHome | None:
    """The campaign's results home when it is not `path` on this host: another collector
    took the campaign over, and `path` holds only part of it."""
    home = results_home(client, campaign_id)
    if home is None or home.same_file(ResultsHome.here(path, "")):
        return None
    return home


def mark_partial(path: Path, campaign_id: str) -> Path | None:
    """Rename a file another collector's took the place of, and its summary, to
    `<campaign>.partial-<host>.jsonl`: no report nor reader takes it for the campaign's
    results. Returns the new name (None when there was no file)."""
    if not path.exists():
        return None
    stem = f"{campaign_id}{PARTIAL}{socket.gethostname()}"
    number = 1
    while (marked := path.with_name(f"{stem}{f'-{number}' if number > 1 else ''}.jsonl")).exists():
        number += 1
    summary = summary_path(path.parent, campaign_id)
    if summary.exists():
        summary.replace(marked.with_name(marked.name.removesuffix(".jsonl") + ".summary.json"))
    path.rename(marked)
    return marked


def make_home(client: redis.Redis, campaign_id: str, file: ResultsFile, collector: str) -> None:
    """Make `file` the campaign's results file: first record in Redis the lines it has that
    Redis lacks (a collector cut off between writing a line and acknowledging it), then
    copy into it the results Redis has and it lacks (the file of another host, or none)."""
    here = ResultsHome.here(file.path, collector)
    before = results_home(client, campaign_id)
    if before is not None and not before.same_file(here):
        log.warning(
            "collector %s: campaign %s moves from %s to %s", collector, campaign_id, before, here
        )
    record_lines(client, campaign_id, file)
    missing = copy_from_stream(client, campaign_id, file)
    if missing:
        log.error(
            "collector %s: %d results of campaign %s are in %s and no longer in Redis; "
            "%s lacks them (copy their lines over from that file)",
            collector, missing, campaign_id, before or "another file", file.path,
        )  # fmt: skip
    client.set(results_home_key(campaign_id), here.model_dump_json(), ex=HOME_TTL_SECONDS)


def record_lines(client: redis.Redis, campaign_id: str, file: ResultsFile) -> None:
    """Add to `collected` and `counts` the jobs whose line is in the file and not in Redis."""
    unknown: set[str] = set()
    ids = iter(file.job_ids)
    while page := list(islice(ids, SCAN_PAGE)):  # never every id of a big campaign at once
        known = client.smismember(collected_key(campaign_id), page)
        unknown.update(job_id for job_id, member in zip(page, known, strict=True) if not member)
    if unknown:
        count(client, campaign_id, file.statuses_of(unknown), sign=1)


def count(
    client: redis.Redis, campaign_id: str, statuses: dict[str, str], sign: int, pipe: Any = None
) -> None:
    """Add (`sign` 1) or take out (-1) jobs, each with its status, of Redis's record.

    A job added `ok` is finished for good, and its stored copy goes with it: at a
    campaign's peak the stored jobs of the finished ones were most of what Redis held
    (docs/performance.md). Nothing sends such a job again but `retry --status ok`, which
    plans it again from its files; a late copy of it is ignored by the worker that meets
    it (its `done` mark stays, for a copy already running). A job that ended otherwise
    keeps its stored copy for `retry` until its campaign is compacted."""
    if not statuses:
        return
    own = pipe is None
    pipe = client.pipeline(transaction=True) if own else pipe
    for status, number in Counter(statuses.values()).items():
        pipe.hincrby(counts_key(campaign_id), status, sign * number)
    ids = list(statuses)
    (pipe.sadd if sign > 0 else pipe.srem)(collected_key(campaign_id), *ids)
    finished = [job_key(i) for i, status in statuses.items() if status == Status.OK.value]
    if sign > 0 and finished:
        pipe.delete(*finished)
    if own:
        pipe.execute()


def forget_results(client: redis.Redis, campaign_id: str, results: Iterable[Result]) -> None:
    """Take results out of Redis's record (`retry` moved their lines away to run them again)."""
    count(client, campaign_id, {r.job_id: r.status.value for r in results}, sign=-1)


def copy_from_stream(client: redis.Redis, campaign_id: str, file: ResultsFile) -> int:
    """Write into the file, from the stream, the collected results it lacks; returns how many
    it still lacks (their entries are gone: the stream is emptied once a file is complete)."""
    lacking = {
        str(job_id)
        for job_id in client.sscan_iter(collected_key(campaign_id), count=SCAN_PAGE)
        if str(job_id) not in file.job_ids
    }
    if lacking:
        file.append(_taken(lacking, checkpointed(client, campaign_id)))
    stream, start = results_stream_key(campaign_id), "-"
    while lacking:
        page = cast(list[Any], client.xrange(stream, start, "+", count=SCAN_PAGE))
        if not page:
            break
        wanted = (f.get("result", "") for _, f in page if f.get("job_id") in lacking)
        file.append(_taken(lacking, wanted))
        start = "(" + page[-1][0]
    return len(lacking)


def _taken(lacking: set[str], raws: Iterable[str]) -> list[Result]:
    """The results of `raws` whose job is `lacking`, the first of each; those are taken
    out of `lacking`."""
    found = []
    for raw in raws:
        try:
            result = Result.model_validate_json(raw)
        except ValidationError:
            continue
        if result.job_id in lacking:
            found.append(result)
            lacking.discard(result.job_id)
    return found


def empty_stream(client: redis.Redis, campaign_id: str) -> None:
    """The campaign's file is complete: its results need not stay in Redis (the consumer
    group stays, for the results of a later `retry`)."""
    pipe = client.pipeline(transaction=True)
    pipe.xtrim(results_stream_key(campaign_id), maxlen=0)
    pipe.delete(checkpoint_key(campaign_id))
    pipe.execute()

"""Taking complete files in, many at a time, each as its own campaign.

The files that settle together (a burst of drops) are taken as one batch: their locks,
records and bookkeeping share one Redis pipeline per step, the jobs of their small
campaigns go out in one send, and the project around them is read once. Each file still
takes the steps it would alone: locked by its content, a record naming its campaign
before any of its jobs is sent, a move to `queued/` once they all are; a bad file goes
to `failed/` without holding up the others.
"""

from __future__ import annotations

import logging
import stat
import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import redis

from evalrelay.bridge.contract.job import Job
from evalrelay.bridge.errors import Diagnostic, EvalrelayError, InvalidFileError
from evalrelay.bridge.evalfile.cases import LoadedEvalFile
from evalrelay.bridge.evalfile.isolated import LoadDeferred, LoadStopped, Outcome, load_all
from evalrelay.bridge.evalfile.project import Project
from evalrelay.bridge.inbox.folders import Inbox
from evalrelay.bridge.inbox.intake import LOCK_SECONDS, Intake, IntakeRecord, drop_identity
from evalrelay.bridge.inbox.settle import Settler
from evalrelay.bridge.inbox.trust import InboxTrust
from evalrelay.bridge.keys import watch_campaigns_key
from evalrelay.bridge.planning.campaigns import plan_jobs
from evalrelay.bridge.queue.budget import budget_of, set_budget
from evalrelay.bridge.queue.campaigns import (
    WRITE_CHUNK,
    CampaignInfo,
    Plan,
    announce,
    load_info,
    new_campaign_id,
    store_jobs,
    submit,
)
from evalrelay.bridge.queue.celery_queue import JobQueue
from evalrelay.bridge.queue.rebuild import DroppedFile, write_record

log = logging.getLogger(__name__)

BATCH = 100
"""Files taken together at most: more share each round trip, fewer reach `queued/` sooner."""

FAIR_SECONDS = 3.0
"""How long one file may load while others wait behind it before it lets them go first."""

MOST_DEFERRALS = 3
"""Times a slow file lets others go first; then it loads to its end (or its limit)."""

RENEW_SECONDS = LOCK_SECONDS / 3
"""How often the batch's locks are renewed while it is loaded and submitted."""

Tell = Callable[..., object]
"""`tell(kind, file, campaign_id, **details)`: the watcher's events for its user."""


@dataclass(eq=False)
class Drop:
    """One complete file on its way to becoming a campaign."""

    path: Path
    relative: Path
    identity: str
    folder_target: str | None
    record: IntakeRecord | None = None
    """Found when the drop was locked; then the record naming its campaign."""
    resuming: bool = False
    """Its campaign was begun by a watcher cut short: send only the jobs it did not."""
    loaded: LoadedEvalFile | None = None
    jobs: list[Job] = field(default_factory=list)
    info: CampaignInfo | None = None

    @property
    def campaign_id(self) -> str:
        assert self.info is not None, "planned first"
        return self.info.campaign_id


class Taker:
    """Turns complete files into campaigns, or into `failed/` beside their errors."""

    def __init__(
        self,
        client: redis.Redis,
        job_queue: JobQueue,
        inbox: Inbox,
        intake: Intake,
        settler: Settler,
        *,
        out_dir: Path,
        inbox_id: str,
        name: str,
        default_target: str | None = None,
        rerun: bool = False,
        trust: InboxTrust | None = None,
        tell: Tell = lambda *args, **details: None,
    ) -> None:
        self.client = client
        self.queue = job_queue
        self.inbox = inbox
        self.intake = intake
        self.settler = settler
        self.out_dir = out_dir
        self.inbox_id = inbox_id
        self.name = name
        self.default_target = default_target
        self.rerun = rerun
        self.trust = trust or InboxTrust()
        self.tell = tell
        self.stopping: Callable[[], bool] = lambda: False
        """Set by the watcher: whether it is asked to stop (a file loading is then killed)."""
        self.others_waiting: Callable[[], bool] = lambda: False
        """Set by the watcher: whether complete files wait to be taken."""
        self.meanwhile: Callable[[], None] = lambda: None
        """Set by the watcher: its own round (results, campaigns complete), done while a
        file loads, so a slow file holds up no campaign already running."""
        self.deferred: dict[Path, int] = {}
        """Files whose load was stopped to let others go first, and how often."""
        self.submitted = 0
        self._locked: list[str] = []
        self._renewed = 0.0

    def take(self, paths: Sequence[Path]) -> None:
        """Take the files, `BATCH` at a time; never raise for a file's sake."""
        for start in range(0, len(paths), BATCH):
            batch = paths[start : start + BATCH]
            try:
                self._take_batch(batch)
            except LoadStopped:
                log.info("watcher %s: stopped while a file was loading", self.name)
                return
            except (redis.RedisError, OSError) as exc:
                # Not the files' fault: they stay, and the next scan takes them again.
                log.warning(
                    "watcher %s: could not take %d files yet: %s", self.name, len(batch), exc
                )

    def _take_batch(self, paths: Sequence[Path]) -> None:
        drops = self._distinct(d for d in map(self._examine, paths) if d is not None)
        taken = self.intake.lock_all([d.identity for d in drops])
        self._locked, self._renewed = list(taken), time.monotonic()
        try:
            mine = [d for d in drops if d.identity in taken]  # the others: another watcher's
            for drop in mine:
                drop.record = taken[drop.identity]
            self._take_locked(mine)
        finally:
            self.intake.unlock_all(taken)

    def _examine(self, path: Path) -> Drop | None:
        """The file as a drop to lock, or None when it is not one (refused, or gone)."""
        relative = self.inbox.relative(path)
        if relative is None:
            return None
        try:
            if path.is_symlink() and not path.resolve().is_relative_to(self.inbox.root):
                self.inbox.fail(
                    path,
                    f"{relative}: a symlink to {path.resolve()}, outside the "
                    "inbox; drop the file itself",
                )
                return None
            if not stat.S_ISREG(path.stat().st_mode):  # reading a FIFO would block for ever
                not_plain = Diagnostic(path, 1, 1, "not a regular file; drop a plain YAML file")
                self.inbox.fail(path, str(not_plain))
                return None
            data = path.read_bytes()
        except OSError as exc:
            self._not_yet(path, exc)
            return None
        folder_target = self.inbox.folder_target(path)
        return Drop(path, relative, drop_identity(data, folder_target), folder_target)

    def _distinct(self, drops: Iterable[Drop]) -> list[Drop]:
        """The first drop of each content. A second copy in the same batch waits for the
        next one, which finds it a duplicate of the first (or runs it, with --rerun)."""
        seen: set[str] = set()
        first = []
        for drop in drops:
            if drop.identity in seen:
                self.settler.touched(drop.path)
            else:
                seen.add(drop.identity)
                first.append(drop)
        return first

    def _take_locked(self, drops: list[Drop]) -> None:
        to_load: list[Drop] = []
        submitted_before: list[Drop] = []
        forget = self.client.pipeline(transaction=False)
        for drop in drops:
            record = drop.record
            if record is not None and record.state != "submitting":
                if record.state == "submitted" and record.path == drop.relative.as_posix():
                    submitted_before.append(drop)  # submitted before a restart
                    continue
                if not self.rerun:
                    self._duplicate(drop, record)
                    continue
                self.intake.forget(drop.identity, forget)  # --rerun: the same content anew
                drop.record = None
            to_load.append(drop)
        forget.execute()
        self._queue_files(self._submit(self._load_all(to_load)), submitted_before)

    def _load_all(self, drops: list[Drop]) -> list[Drop]:
        """Load and plan the drops, each bounded by its project's `load_limits` in a child
        process, so no file can stall or exhaust the watcher; the drops that loaded."""
        projects: dict[Path, Project] = {}  # read once per folder and batch, not per file
        found: list[tuple[Drop, Project]] = []
        for drop in drops:
            folder = drop.path.parent
            try:
                project = projects.get(folder) or projects.setdefault(
                    folder, self.trust.project(self.inbox.root, drop.path)
                )
            except Exception as exc:
                self._refuse(drop, exc)
                continue
            found.append((drop, project))
        files = [(drop.path, project) for drop, project in found]

        def give_way(index: int, seconds: float) -> bool:
            """A slow file lets the other files of its batch (whose jobs are sent when the
            batch has loaded) and the files newly complete go first: so one file cannot
            hold the inbox for its whole load limit."""
            try:
                self.meanwhile()
            except (redis.RedisError, OSError) as exc:  # the load goes on; next poll retries
                log.warning("watcher %s: while a file loads: %s", self.name, exc)
            path = files[index][0]
            return (
                seconds >= FAIR_SECONDS
                and self.deferred.get(path, 0) < MOST_DEFERRALS
                and (len(files) > 1 or self.others_waiting())
            )

        return [
            found[index][0]
            for index, outcome in load_all(files, self.stopping, give_way)
            if self._load(found[index][0], outcome)
        ]

    def _load(self, drop: Drop, outcome: Outcome) -> bool:
        """Plan the loaded file; on failure say why (`failed/`) and return False."""
        if isinstance(outcome, LoadDeferred):
            self.deferred[drop.path] = self.deferred.get(drop.path, 0) + 1
            self.settler.touched(drop.path)  # taken again, after the files now waiting
            log.info("watcher %s: %s loads slowly; the files waiting go first", self.name,
                     drop.relative)  # fmt: skip
            return False
        self.deferred.pop(drop.path, None)
        try:
            if isinstance(outcome, Exception):
                raise outcome
            drop.loaded = outcome
            self.trust.check(drop.loaded)
            record = drop.record
            self._plan(drop, record.campaign_id if record else new_campaign_id([drop.loaded]))
            return True
        except Exception as exc:
            self._refuse(drop, exc)
        finally:
            self._keep_locks()  # a large file takes a while to load
        return False

    def _refuse(self, drop: Drop, exc: Exception) -> None:
        """A file that could not be loaded: `failed/` with why, or left for the next scan
        when the file system is at fault."""
        if isinstance(exc, EvalrelayError):
            self._invalid(drop, _error_text(exc), wait_for_writer=True)
        elif isinstance(exc, OSError):
            self._not_yet(drop.path, exc)
        else:  # a file that breaks the loader must not break the watcher
            log.error("watcher %s: %s could not be read", self.name, drop.relative, exc_info=exc)
            why = f"evalrelay could not read this file ({type(exc).__name__}: {exc}); report it"
            self._invalid(drop, str(Diagnostic(drop.path, 1, 1, why)), wait_for_writer=False)

    def _plan(self, drop: Drop, campaign_id: str) -> None:
        assert drop.loaded is not None
        fallback = drop.folder_target or self.default_target
        drop.jobs = plan_jobs(campaign_id, [drop.loaded], None, None, fallback_target=fallback)
        drop.info = CampaignInfo.for_jobs(
            campaign_id,
            drop.jobs,
            [str(drop.path)],
            str(self.out_dir),
            "watch",
            plan=Plan(fallback_target=fallback),
        )

    def _invalid(self, drop: Drop, errors: str, *, wait_for_writer: bool) -> None:
        try:
            if drop.record is not None:
                self.intake.forget(drop.identity)
            recent = time.time() - drop.path.stat().st_mtime < self.settler.settle
            if wait_for_writer and recent:
                self.settler.touched(drop.path)  # maybe a writer that reopens the file: wait
                return
            self.inbox.fail(drop.path, errors)
        except OSError as exc:
            self._not_yet(drop.path, exc)
            return
        log.warning("watcher %s: %s is invalid; moved to failed/", self.name, drop.relative)
        self.tell("invalid", drop.relative.as_posix(), "", why=errors)

    def _submit(self, drops: list[Drop]) -> list[Drop]:
        """Name each drop's campaign in its record, then send every job; the drops sent.

        The record names the campaign before any job is sent, so a watcher killed halfway
        leaves the next one the same campaign to finish, not a second one to start.
        """
        fresh = {d.identity: d for d in drops if d.record is None}
        records = {i: self.intake.new_record(d.campaign_id, d.relative) for i, d in fresh.items()}
        created = self.intake.create_all(records)
        ready = []
        for drop in drops:
            if drop.identity in created:
                drop.record = records[drop.identity]
            elif not self._finish_unfinished(drop):
                continue  # another watcher took the file meanwhile and is done with it
            ready.append(drop)
        pipe = self.client.pipeline(transaction=False)
        for drop in ready:
            pipe.hset(watch_campaigns_key(self.inbox_id), drop.campaign_id, "")
        pipe.execute()
        self._set_budgets(ready)
        self._send(ready)
        for drop in ready:
            self.submitted += 1
            log.info(
                "watcher %s: %s is campaign %s (%d jobs)",
                self.name, drop.path.name, drop.campaign_id, len(drop.jobs),
            )  # fmt: skip
            self.tell("queued", drop.relative.as_posix(), drop.campaign_id, jobs=len(drop.jobs))
        return ready

    def _set_budgets(self, drops: list[Drop]) -> None:
        """Each new campaign's budget (`--budget-per-file`), before any of its jobs is sent,
        so every answer is charged; a campaign resumed keeps the one it has, raised or not."""
        usd = self.trust.budget_usd
        if usd is None:
            return
        for drop in drops:
            if budget_of(self.client, drop.campaign_id) is None:
                set_budget(self.client, drop.campaign_id, usd, f"watcher {self.name}")

    def _finish_unfinished(self, drop: Drop) -> bool:
        """A drop with a record already (from a watcher cut short, or whose lock lapsed
        while it loaded): finish that campaign rather than start a second one."""
        if drop.record is None:
            drop.record = self.intake.record(drop.identity)
            if drop.record is None or drop.record.state != "submitting":
                return False
            try:
                self._plan(drop, drop.record.campaign_id)
            except EvalrelayError as exc:
                self._not_yet(drop.path, exc)
                return False
        drop.resuming = True
        log.warning(
            "watcher %s: %s: finishing the submission of campaign %s, cut short earlier",
            self.name, drop.relative, drop.campaign_id,
        )  # fmt: skip
        return True

    def _send(self, drops: list[Drop]) -> None:
        """New campaigns of up to `WRITE_CHUNK` jobs are stored one by one and their jobs
        sent together, `WRITE_CHUNK` at a time; a larger or unfinished one goes through
        `submit` alone. The locks are renewed between the chunks, as `submit` does."""
        together = [d for d in drops if not d.resuming and len(d.jobs) <= WRITE_CHUNK]
        for group in _groups(together, WRITE_CHUNK):
            announced = []
            for drop in group:
                assert drop.info is not None and drop.loaded is not None
                store_jobs(self.client, drop.jobs)
                announced.append(announce(self.client, drop.info, [drop.loaded], drop.jobs))
            # Stamped with the first announcement: no job looks sent before its message.
            first = min((ms for ms in announced if ms is not None), default=None)
            self.queue.send([job for drop in group for job in drop.jobs], announced_ms=first)
            self._keep_locks()
        for drop in drops:
            if drop not in together:
                assert drop.info is not None and drop.loaded is not None
                submit(
                    self.client,
                    self.queue,
                    drop.info,
                    drop.jobs,
                    [drop.loaded],
                    resuming=drop.resuming,
                    after_chunk=self._keep_locks,
                )

    def _queue_files(self, submitted: list[Drop], submitted_before: list[Drop]) -> None:
        """Record the campaigns as submitted, then move their files to `queued/`."""
        pipe = self.client.pipeline(transaction=False)
        for drop in submitted:
            assert drop.record is not None
            drop.record = drop.record.model_copy(update={"state": "submitted"})
            self.intake.update(drop.identity, drop.record, pipe)
        pipe.execute()
        for drop in submitted + submitted_before:
            try:
                queued = self._move_to_queued(drop)
            except OSError as exc:
                self._not_yet(drop.path, exc)  # its record says `submitted`: moved next time
                continue
            record = drop.record
            assert record is not None
            self.intake.update(
                drop.identity,
                record.model_copy(update={"state": "queued", "queued_path": queued}),
                pipe,
            )
            if record.campaign_id:
                self._keep_record(drop, record.campaign_id, queued)
                pipe.hset(watch_campaigns_key(self.inbox_id), record.campaign_id, queued)
        pipe.execute()

    def _keep_record(self, drop: Drop, campaign_id: str, queued: str) -> None:
        """Beside its results, the campaign and the file it was queued as: what a watcher
        rebuilds it from should Redis lose its data (`bridge.inbox.rebuild`). Without it
        the campaign still runs, but cannot be rebuilt: said, not raised."""
        dropped = DroppedFile(
            inbox=str(self.inbox.root),
            path=drop.relative.as_posix(),
            queued=queued,
            identity=drop.identity,
        )
        try:
            info = drop.info or load_info(self.client, campaign_id)  # submitted before a restart
            write_record(info, dropped)
        except (EvalrelayError, OSError) as exc:
            log.warning(
                "watcher %s: could not keep the record of campaign %s (%s): should Redis lose "
                "its data, it cannot be rebuilt",
                self.name, campaign_id, exc,
            )  # fmt: skip

    def _move_to_queued(self, drop: Drop) -> str:
        """The file's new path in the inbox."""
        return self.inbox.move(drop.path, "queued").relative_to(self.inbox.root).as_posix()

    def _duplicate(self, drop: Drop, record: IntakeRecord) -> None:
        try:
            moved = self.inbox.move(drop.path, "done")
            moved.with_name(moved.name + ".duplicate.txt").write_text(
                f"The same content already ran as campaign {record.campaign_id} "
                f"(dropped as {record.path}); it was not run again. Edit the file, or run the "
                "watcher with --rerun, to run it again.\n",
                encoding="utf-8",
            )
        except OSError as exc:
            self._not_yet(drop.path, exc)
            return
        log.info(
            "watcher %s: %s duplicates campaign %s; moved to done/",
            self.name, drop.relative, record.campaign_id,
        )  # fmt: skip
        self.tell("duplicate", drop.relative.as_posix(), record.campaign_id)

    def _keep_locks(self) -> None:
        if time.monotonic() - self._renewed >= RENEW_SECONDS:
            self.intake.renew_all(self._locked)
            self._renewed = time.monotonic()

    def _not_yet(self, path: Path, exc: Exception) -> None:
        if isinstance(exc, FileNotFoundError):
            log.info("watcher %s: %s went away before it was taken", self.name, path)
        else:
            # The file stays where it is; the next scan tries it again.
            log.warning("watcher %s: could not take %s yet: %s", self.name, path, exc)


def _groups(drops: list[Drop], most_jobs: int) -> Iterator[list[Drop]]:
    """The drops in order, in groups of at most `most_jobs` jobs (each drop has at most)."""
    group: list[Drop] = []
    jobs = 0
    for drop in drops:
        if group and jobs + len(drop.jobs) > most_jobs:
            yield group
            group, jobs = [], 0
        group.append(drop)
        jobs += len(drop.jobs)
    if group:
        yield group


def _error_text(exc: Exception) -> str:
    if isinstance(exc, InvalidFileError):
        return "\n".join(str(d) for d in exc.diagnostics)
    return str(exc)

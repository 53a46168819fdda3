"""The inbox watcher: complete eval files dropped in a folder become campaigns, once each.

File events (watchdog's native observer, or polling for network shares) and a periodic
rescan feed a `Settler`; the files complete at each turn go to a `Taker`, which
validates them, claims each by content in Redis, submits each as a campaign (together,
in a burst) and moves it to `queued/`; the watcher moves it on to `done/` when its
campaign has every result. An invalid file goes to `failed/` with its errors. Nothing
dropped is ever deleted, and a bad file never stops the watcher.

A Redis that lost its data (restarted empty, or evicted keys) has forgotten the campaigns
whose files wait in `queued/`: the watcher notices (its mark, `epoch_key`, changed, or a
campaign is gone) and rebuilds each from its file and its results (`bridge.inbox.rebuild`).
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import queue
import socket
import time
from collections.abc import Callable
from pathlib import Path
from typing import Literal

import redis
from pydantic import BaseModel, Field
from watchdog.events import (
    FileClosedEvent,
    FileCreatedEvent,
    FileModifiedEvent,
    FileMovedEvent,
    FileSystemEvent,
    FileSystemEventHandler,
)
from watchdog.observers import Observer
from watchdog.observers.polling import PollingObserver

from evalrelay.bridge.connection import RideOut
from evalrelay.bridge.contract.campaign_state import current_epoch
from evalrelay.bridge.delivery.holders import beat
from evalrelay.bridge.errors import EvalrelayError
from evalrelay.bridge.evalfile.isolated import LoadStopped, prepare
from evalrelay.bridge.inbox.folders import Inbox
from evalrelay.bridge.inbox.intake import Intake, IntakeRecord
from evalrelay.bridge.inbox.rebuild import plan_dropped
from evalrelay.bridge.inbox.settle import Settler
from evalrelay.bridge.inbox.taker import Taker
from evalrelay.bridge.inbox.trust import InboxTrust
from evalrelay.bridge.keys import watch_campaigns_key, watchers_key
from evalrelay.bridge.queue.campaigns import CampaignInfo, Progress, load_info, progress_many
from evalrelay.bridge.queue.celery_queue import JobQueue
from evalrelay.bridge.queue.rebuild import CampaignRecord, records_in, restore
from evalrelay.bridge.reports.writer import ReportsApart
from evalrelay.bridge.results.collector import Collector
from evalrelay.bridge.results.results_file import job_ids_on_disk, results_path, summary_path

log = logging.getLogger(__name__)

RESCAN_SECONDS = 30.0
"""The kernel can drop events (inotify overflow); a rescan this often finds what they missed."""

TICK_SECONDS = 0.1

REPORT_SECONDS = 5.0
"""How often the watcher's heartbeat, last scan and backlog are written for `status`."""

FOLLOW_SECONDS = 0.5
"""How often results are collected, finished campaigns moved to `done/`, and Redis's mark
looked at (a Redis that lost its data has another)."""

LOST = "Redis lost its data (it restarted empty, or evicted keys; run it with appendonly yes)"

EventKind = Literal["queued", "done", "duplicate", "rebuilt", "invalid"]


class InboxEvent(BaseModel):
    """What became of a dropped file, for whoever runs the watcher to tell its user: a
    file taken in (`queued`, with its number of jobs), its campaign complete (`done`, with
    its results file and counts by status), the same content run before (`duplicate`), or
    its campaign rebuilt after Redis lost it (`rebuilt`, with the results kept and the
    jobs sent again), or a file that cannot run (`invalid`, moved to failed/ with `why`)."""

    kind: EventKind
    file: str
    """The file's path inside the inbox."""
    campaign_id: str
    """Empty for an `invalid` file: it has no campaign."""
    jobs: int | None = None
    results: str | None = None
    counts: dict[str, int] = Field(default_factory=dict)
    passed: int | None = None
    """`done`: the graded results that passed, of `graded`."""
    graded: int | None = None
    kept: int | None = None
    why: str | None = None
    """`invalid`: the problems, one a line, as failed/'s note says them."""


def passed_of(summary: Path) -> dict[str, int]:
    """`passed` and `graded` from the summary the collector wrote as the campaign ended;
    nothing when it could not be read (the event says the rest)."""
    try:
        targets = json.loads(summary.read_text(encoding="utf-8"))["targets"].values()
        return {
            "passed": sum(int(t["passed"]) for t in targets),
            "graded": sum(int(t["scored"]) for t in targets),
        }
    except (OSError, ValueError, KeyError, TypeError, AttributeError):
        return {}


class _Events(FileSystemEventHandler):
    """Runs on watchdog's thread: only hands paths over to the watcher's loop."""

    def __init__(self, paths: queue.Queue[tuple[Path, bool]]) -> None:
        self.paths = paths

    def on_any_event(self, event: FileSystemEvent) -> None:
        if event.is_directory:
            return
        if isinstance(event, FileMovedEvent):
            self.paths.put((Path(os.fsdecode(event.dest_path)), False))
        elif isinstance(event, FileCreatedEvent | FileModifiedEvent | FileClosedEvent):
            self.paths.put((Path(os.fsdecode(event.src_path)), isinstance(event, FileClosedEvent)))


class Watcher:
    def __init__(
        self,
        client: redis.Redis,
        job_queue: JobQueue,
        inbox: Path,
        out_dir: Path,
        *,
        default_target: str | None = None,
        rerun: bool = False,
        trust: InboxTrust | None = None,
        polling: bool = False,
        name: str | None = None,
        settler: Settler | None = None,
        on_event: Callable[[InboxEvent], object] = lambda event: None,
    ) -> None:
        self.client = client
        self.queue = job_queue
        self.inbox = Inbox(inbox)
        self.out_dir = out_dir.resolve()
        self.polling = polling
        self.name = name or f"watch-{os.getpid()}@{socket.gethostname()}"
        self.inbox_id = hashlib.sha256(str(self.inbox.root).encode()).hexdigest()[:16]
        self.settler = settler or Settler()
        self.on_event = on_event
        self.trust = trust or InboxTrust()
        self.taker = Taker(
            client,
            job_queue,
            self.inbox,
            Intake(client, self.name),
            self.settler,
            out_dir=self.out_dir,
            inbox_id=self.inbox_id,
            name=self.name,
            default_target=default_target,
            rerun=rerun,
            trust=self.trust,
            tell=self._tell,
        )
        self.events: queue.Queue[tuple[Path, bool]] = queue.Queue()
        self.infos: dict[str, CampaignInfo] = {}
        """The campaigns collected, as Redis had them (or their records, once Redis lost
        them): their results folder and size, which a file being finished still needs."""
        self.reports = ReportsApart()
        self.collector = Collector(
            client,
            f"watch-{self.inbox_id}@{socket.gethostname()}",
            lambda c: Path(self._info(c).out_dir),
            lambda c: self._info(c).total,
            self.reports,
            counting=True,
        )
        self.last_scan = 0.0
        self.followed_at = 0.0
        self.reported_at: float | None = None
        self.epoch: str | None = None
        """Redis's mark when last looked at; another one means it lost its data since."""
        self.unfollowed: dict[str, float] = {}
        """Files in `queued/` no campaign of this inbox names, by when first seen so."""

    def run(self, stop: object) -> None:
        """Watch until `stop.is_set()` (a threading.Event)."""
        self.taker.stopping = stop.is_set  # type: ignore[attr-defined]
        self.taker.others_waiting = self._others_waiting
        self.taker.meanwhile = self._follow_when_due
        prepare()  # the process that loads each file, ready before the first one
        observer = PollingObserver(timeout=1.0) if self.polling else Observer()
        observer.schedule(_Events(self.events), str(self.inbox.root), recursive=True)
        observer.start()
        log.info("watcher %s: watching %s", self.name, self.inbox.root)
        ride_out = RideOut(lambda text: log.warning("watcher %s: %s", self.name, text), self.client)
        try:
            while not stop.is_set():  # type: ignore[attr-defined]
                ride_out(self.step)
        finally:
            observer.stop()
            observer.join(10)
            self.collector.close()
            self.reports.close()

    def step(self) -> None:
        """One turn: take events, rescan when due, submit complete files, follow campaigns,
        end the reports' child if it is idle."""
        self._take_events()
        if time.monotonic() - self.last_scan >= RESCAN_SECONDS or not self.last_scan:
            self.scan()
        self.taker.take(self.settler.complete())
        self._follow_when_due()
        self.reports.end_if_idle()

    def scan(self) -> None:
        for path in self.inbox.scan():
            self.settler.touched(path)
        self.last_scan = time.monotonic()
        try:
            self._find_lost_campaigns()
        except (redis.RedisError, OSError) as exc:
            log.warning("watcher %s: could not check queued/: %s", self.name, exc)

    def _info(self, campaign_id: str) -> CampaignInfo:
        info = self.infos.get(campaign_id)
        if info is None:
            info = self.infos[campaign_id] = load_info(self.client, campaign_id)
        return info

    def _notice_lost_data(self) -> None:
        """When Redis's mark changed, it lost every campaign: let go of their files and
        rebuild at once each one whose file waits in `queued/`."""
        epoch = current_epoch(self.client)
        seen, self.epoch = self.epoch, epoch
        if seen is None or seen == epoch:
            return
        log.error(
            "watcher %s: %s: the campaigns of %s are gone from it; rebuilding each whose file "
            "is in queued/ from that file and its results in %s",
            self.name, LOST, self.inbox.root, self.out_dir,
        )  # fmt: skip
        self.collector.redis_lost()
        self.scan()

    def _find_lost_campaigns(self) -> None:
        """Files in `queued/` whose campaign Redis no longer has (it lost its data) are
        rebuilt from their record; one with no record goes to `failed/` saying so, instead
        of waiting there for ever. A file a campaign names again (its watcher stopped
        between the two) is followed again."""
        key = watch_campaigns_key(self.inbox_id)
        followed = {str(k): str(v) for k, v in self.client.hgetall(key).items()}
        gone = [  # a campaign with no path yet is still being submitted
            c
            for c, state in progress_many(self.client, list(followed)).items()
            if not state.known and followed[c]
        ]
        queued = self.inbox.root / "queued"
        waiting = {
            p.relative_to(self.inbox.root).as_posix()
            for p in queued.rglob("*")
            if p.is_file() and self.inbox.wants_queued(p)
        }
        unfollowed = waiting - set(followed.values())
        now = time.monotonic()
        self.unfollowed = {p: self.unfollowed.get(p, now) for p in unfollowed}
        if not gone and not unfollowed:
            return
        records = self._records()
        known = progress_many(self.client, [r.campaign_id for r in records.values()])
        for campaign_id in gone:
            self.client.hdel(key, campaign_id)
            record = records.get(followed[campaign_id])
            if record is not None and record.campaign_id == campaign_id:
                self._rebuild(record)
            else:
                self._lost(self.inbox.root / followed[campaign_id], campaign_id)
        for path in sorted(unfollowed):
            record = records.get(path)
            if record is not None and not known[record.campaign_id].known:
                self._rebuild(record)
            elif now - self.unfollowed[path] < RESCAN_SECONDS:
                continue  # another watcher of this inbox may have moved it just now
            elif record is not None:
                self.client.hset(key, record.campaign_id, path)
            else:
                self._lost(self.inbox.root / path, None)

    def _records(self) -> dict[str, CampaignRecord]:
        """The records of this inbox's campaigns, by their file in `queued/`; none from a
        results folder inside the inbox, where whoever drops files could write them too."""
        if self.out_dir.is_relative_to(self.inbox.root):
            return {}
        return {
            r.dropped.queued: r
            for r in records_in(self.out_dir)
            if r.dropped is not None and r.dropped.inbox == str(self.inbox.root)
        }

    def _rebuild(self, record: CampaignRecord) -> None:
        """Make the campaign Redis lost known again, from its file in `queued/` and its
        results: the jobs without a line are sent again. A file that cannot give the same
        campaign goes to `failed/` saying why; a file-system error waits for the next scan."""
        assert record.dropped is not None
        campaign_id, dropped = record.campaign_id, record.dropped
        path = dropped.queued_path()
        if not path.exists():
            return  # moved on meanwhile (by another watcher of this inbox, or a person)
        results = results_path(Path(record.info.out_dir), campaign_id)
        try:
            loaded, jobs = plan_dropped(record, self.inbox, self.trust, self.taker.stopping)
            kept = job_ids_on_disk(results)
            sent = restore(self.client, self.queue, record.info, [loaded], jobs, kept, self.name)
        except LoadStopped:
            return  # the watcher is stopping; the next one rebuilds it
        except (redis.RedisError, OSError) as exc:  # not the file's fault: the next scan
            log.warning(
                "watcher %s: could not rebuild campaign %s yet: %s", self.name, campaign_id, exc
            )
            return
        except Exception as exc:  # whatever the file does, the watcher goes on
            why = exc if isinstance(exc, EvalrelayError | ValueError) else repr(exc)
            self.inbox.fail(
                path,
                f"{LOST}, and with it campaign {campaign_id}; it could not be rebuilt from "
                f"this file: {why}. The results collected before are in {results}. Drop the "
                "file again to run it anew.",
            )
            log.error(
                "watcher %s: campaign %s could not be rebuilt (%s); %s moved to failed/",
                self.name, campaign_id, why, path.name,
            )  # fmt: skip
            return
        if sent is None:
            return  # another watcher of this inbox rebuilt it, and follows it
        self.infos[campaign_id] = record.info
        intake = IntakeRecord(
            state="queued",
            watcher=self.name,
            path=dropped.path,
            campaign_id=campaign_id,
            queued_path=dropped.queued,
        )
        pipe = self.client.pipeline(transaction=False)
        self.taker.intake.update(dropped.identity, intake, pipe)  # dropped again: a duplicate
        pipe.hset(watch_campaigns_key(self.inbox_id), campaign_id, dropped.queued)
        pipe.execute()
        log.warning(
            "watcher %s: campaign %s rebuilt from %s and %s: %d results kept, %d jobs sent "
            "again",
            self.name, campaign_id, dropped.queued, results, len(kept), len(sent),
        )  # fmt: skip
        file = Path(*Path(dropped.queued).parts[1:]).as_posix()
        self._tell("rebuilt", file, campaign_id, jobs=len(sent), kept=len(kept))

    def _lost(self, path: Path, campaign_id: str | None) -> None:
        if not path.exists():
            return
        which = f"its campaign {campaign_id}" if campaign_id else "its campaign"
        self.inbox.fail(
            path,
            f"Redis no longer has {which}: it restarted without keeping its data (run it "
            f"with appendonly yes), or the campaign expired, and {self.out_dir} keeps no "
            f"record of it to rebuild it from. The results collected before are in "
            f"{self.out_dir}. Drop the file again to run it anew.",
        )
        log.warning("watcher %s: %s lost its campaign; moved to failed/", self.name, path.name)

    def _take_events(self) -> None:
        deadline = time.monotonic() + min(TICK_SECONDS, self.settler.due_in())
        while True:
            try:
                path, closed = self.events.get(timeout=max(0.0, deadline - time.monotonic()))
            except queue.Empty:
                return
            if self.inbox.wants(path):
                self.settler.touched(path, closed)

    def _follow_when_due(self) -> None:
        """Collect results and finish campaigns, when it is time to look again."""
        if time.monotonic() - self.followed_at >= FOLLOW_SECONDS:
            self._follow()
            self.followed_at = time.monotonic()
        self._report()

    def _others_waiting(self) -> bool:
        """Whether complete files wait while one loads: the events so far taken in, without
        waiting for more."""
        while True:
            try:
                path, closed = self.events.get_nowait()
            except queue.Empty:
                break
            if self.inbox.wants(path):
                self.settler.touched(path, closed)
        return self.settler.waiting()

    def _follow(self) -> None:
        """Collect the inbox's campaigns; move each file to `done/` when its campaign is."""
        self._notice_lost_data()
        campaigns = sorted(str(c) for c in self.client.hkeys(watch_campaigns_key(self.inbox_id)))
        if not campaigns:
            return
        self.collector.poll(campaigns, block_ms=10)
        for campaign_id, state in progress_many(self.client, campaigns).items():
            if state.finished:
                self.collector.finish(campaign_id)
                self._done(campaign_id, state)
                if campaign_id not in self.collector.unfinished:
                    self.infos.pop(campaign_id, None)  # what a summary still to write needs

    def _done(self, campaign_id: str, state: Progress) -> None:
        key = watch_campaigns_key(self.inbox_id)
        queued = self.client.hget(key, campaign_id)
        if not queued or not self.client.hdel(key, campaign_id):
            return  # not moved to queued/ yet, or another watcher on this inbox finished it
        path = self.inbox.root / str(queued)
        if path.exists() or path.is_symlink():
            self.inbox.move(path, "done")
            log.info(
                "watcher %s: campaign %s done; %s moved to done/", self.name, campaign_id, path.name
            )
        out_dir = self.collector.out_dir_for(campaign_id)
        self._tell(
            "done",
            Path(*Path(str(queued)).parts[1:]).as_posix(),
            campaign_id,
            jobs=state.total,
            results=str(results_path(out_dir, campaign_id)),
            counts=state.counts,
            **passed_of(summary_path(out_dir, campaign_id)),
        )

    def _tell(
        self,
        kind: EventKind,
        file: str,
        campaign_id: str,
        **details: object,
    ) -> None:
        """Hand an event to `on_event`; a failing listener never stops the watcher."""
        try:
            self.on_event(InboxEvent(kind=kind, file=file, campaign_id=campaign_id, **details))
        except Exception:
            log.exception("watcher %s: could not report %s of %s", self.name, kind, file)

    def _report(self) -> None:
        """This watcher's entry in `status`; its times are Redis's (`seen`) or relative
        to it (`scan_age`): the host's clock may be wrong."""
        now = time.monotonic()
        if self.reported_at is not None and now - self.reported_at < REPORT_SECONDS:
            return
        self.reported_at = now
        backlog = len(self.settler) + self.events.qsize()
        info = {
            "inbox": str(self.inbox.root),
            "host": socket.gethostname(),
            "pid": os.getpid(),
            "scan_age": now - self.last_scan,
            "backlog": backlog,
            "submitted": self.taker.submitted,
            "active_campaigns": self.client.hlen(watch_campaigns_key(self.inbox_id)),
        }
        beat(self.client, watchers_key(), self.name, info)

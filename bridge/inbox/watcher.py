"""The inbox watcher: complete eval files dropped in a folder become campaigns, once each.

File events (watchdog's native observer, or polling for network shares) and a periodic
rescan feed a `Settler`; the files complete at each turn go to a `Taker`, which
validates them, claims each by content in Redis, submits each as a campaign (together,
in a burst) and moves it to `queued/`; the watcher moves it on to `done/` when its
campaign has every result. An invalid file goes to `failed/` with its errors. Nothing
dropped is ever deleted, and a bad file never stops the watcher.
"""

from __future__ import annotations

import hashlib
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

from bridge.evalfile.isolated import prepare
from bridge.inbox.folders import Inbox
from bridge.inbox.intake import Intake
from bridge.inbox.settle import Settler
from bridge.inbox.taker import Taker
from bridge.inbox.trust import InboxTrust
from bridge.keys import watch_campaigns_key, watchers_key
from bridge.queue.campaigns import Progress, load_info, progress_many
from bridge.queue.celery_queue import JobQueue
from bridge.queue.holders import beat
from bridge.reports.writer import ensure_html_beside
from bridge.results.collector import Collector
from bridge.results.results_file import results_path

log = logging.getLogger(__name__)

RESCAN_SECONDS = 30.0
"""The kernel can drop events (inotify overflow); a rescan this often finds what they missed."""

TICK_SECONDS = 0.1

REPORT_SECONDS = 5.0
"""How often the watcher's heartbeat, last scan and backlog are written for `status`."""

FOLLOW_SECONDS = 0.5
"""How often results are collected and finished campaigns moved to `done/`."""


class InboxEvent(BaseModel):
    """What became of a dropped file, for whoever runs the watcher to tell its user: a
    file taken in (`queued`, with its number of jobs), its campaign complete (`done`, with
    its results file and counts by status), or the same content run before (`duplicate`)."""

    kind: Literal["queued", "done", "duplicate"]
    file: str
    """The file's path inside the inbox."""
    campaign_id: str
    jobs: int | None = None
    results: str | None = None
    counts: dict[str, int] = Field(default_factory=dict)


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
            trust=trust,
            tell=self._tell,
        )
        self.events: queue.Queue[tuple[Path, bool]] = queue.Queue()
        self.collector = Collector(
            client,
            f"watch-{self.inbox_id}@{socket.gethostname()}",
            lambda c: Path(load_info(client, c).out_dir),
            lambda c: load_info(client, c).total,
            ensure_html_beside,
        )
        self.last_scan = 0.0
        self.followed_at = 0.0
        self.reported_at: float | None = None
        self.unfollowed: set[Path] = set()

    def run(self, stop: object) -> None:
        """Watch until `stop.is_set()` (a threading.Event)."""
        self.taker.stopping = stop.is_set  # type: ignore[attr-defined]
        prepare()  # the process that loads each file, ready before the first one
        observer = PollingObserver(timeout=1.0) if self.polling else Observer()
        observer.schedule(_Events(self.events), str(self.inbox.root), recursive=True)
        observer.start()
        log.info("watcher %s: watching %s", self.name, self.inbox.root)
        try:
            while not stop.is_set():  # type: ignore[attr-defined]
                self.step()
        finally:
            observer.stop()
            observer.join(10)
            self.collector.close()

    def step(self) -> None:
        """One turn: take events, rescan when due, submit complete files, follow campaigns."""
        self._take_events()
        if time.monotonic() - self.last_scan >= RESCAN_SECONDS or not self.last_scan:
            self.scan()
        self.taker.take(self.settler.complete())
        if time.monotonic() - self.followed_at >= FOLLOW_SECONDS:
            self._follow()
            self.followed_at = time.monotonic()
        self._report()

    def scan(self) -> None:
        for path in self.inbox.scan():
            self.settler.touched(path)
        self.last_scan = time.monotonic()
        try:
            self._find_lost_campaigns()
        except (redis.RedisError, OSError) as exc:
            log.warning("watcher %s: could not check queued/: %s", self.name, exc)

    def _find_lost_campaigns(self) -> None:
        """Files in `queued/` whose campaign Redis no longer has (it restarted without its
        data) go to `failed/`, saying so, instead of waiting there for ever."""
        key = watch_campaigns_key(self.inbox_id)
        followed = {str(k): str(v) for k, v in self.client.hgetall(key).items()}
        for campaign_id, state in progress_many(self.client, list(followed)).items():
            if not state.known and followed[campaign_id]:
                self.client.hdel(key, campaign_id)
                self._lost(self.inbox.root / followed[campaign_id], campaign_id)
        queued = self.inbox.root / "queued"
        unfollowed = {
            p for p in queued.rglob("*") if p.is_file() and self.inbox.wants_queued(p)
        } - {self.inbox.root / v for v in followed.values() if v}
        # Another watcher on this inbox may have moved a file and not yet recorded it:
        # only a file unfollowed at two scans in a row is lost.
        for path in unfollowed & self.unfollowed:
            self._lost(path, None)
        self.unfollowed = unfollowed - self.unfollowed

    def _lost(self, path: Path, campaign_id: str | None) -> None:
        if not path.exists():
            return
        which = f"its campaign {campaign_id}" if campaign_id else "its campaign"
        self.inbox.fail(
            path,
            f"Redis no longer has {which}: it restarted without keeping its data (run it "
            f"with appendonly yes), or the campaign expired. The results collected before "
            f"are in {self.out_dir}. Drop the file again to run it anew.",
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

    def _follow(self) -> None:
        """Collect the inbox's campaigns; move each file to `done/` when its campaign is."""
        campaigns = sorted(str(c) for c in self.client.hkeys(watch_campaigns_key(self.inbox_id)))
        if not campaigns:
            return
        self.collector.poll(campaigns, block_ms=10)
        for campaign_id, state in progress_many(self.client, campaigns).items():
            if state.finished:
                self.collector.finish(campaign_id)
                self._done(campaign_id, state)

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
        self._tell(
            "done",
            Path(*Path(str(queued)).parts[1:]).as_posix(),
            campaign_id,
            jobs=state.total,
            results=str(results_path(self.collector.out_dir_for(campaign_id), campaign_id)),
            counts=state.counts,
        )

    def _tell(
        self,
        kind: Literal["queued", "done", "duplicate"],
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

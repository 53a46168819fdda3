"""The campaign pages `evalrelay serve` shows: the very report `evalrelay report` writes
(`write_html`), with the live panel under its title, made into a cache folder.

A report of 100,000 results takes seconds to make, so one is made again only when the
results file changed, at most every few seconds (longer for reports that take longer), in
a thread, while the last one is served. It is made from a copy of the file's whole lines:
a collector may be half-way through writing a line.

Each making is a page of its own name with its own parts folder beside it
(`report-<token>.html`, `report-<token>.html.parts/`), and the one before it is kept: a
page open in a browser still reads its rows' details from its own parts while a newer
report is made. Older ones are deleted.
"""

from __future__ import annotations

import contextlib
import os
import re
import secrets
import shutil
import threading
import time
from collections.abc import Callable, Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

import psutil
from markupsafe import Markup

from evalrelay.bridge.live.lines import copy_whole_lines
from evalrelay.bridge.reports.campaign import CampaignResults
from evalrelay.bridge.reports.html import write_html

MIN_SECONDS = 3.0
"""The least time between two makings of one campaign's report."""

RELOAD_SECONDS = 5.0
"""The least time a page stays before reloading itself for a newer report."""

KEPT = 2
"""Makings kept per campaign: the newest, and the one before for pages still open."""

MAKERS = 2
"""Reports made at once: each may hold some 100 MB while it is made."""

PARTS = re.compile(r"report-[0-9a-f]{8}\.html\.parts")
PART = re.compile(r"[0-9]{4,8}\.js")

Signature = tuple[int, int, int, int]
"""A file's device, inode, size and mtime: which file, and whether it changed."""


def signature(path: Path) -> Signature | None:
    try:
        stat = path.stat()
    except FileNotFoundError:
        return None
    return (stat.st_dev, stat.st_ino, stat.st_size, stat.st_mtime_ns)


@dataclass(frozen=True)
class Report:
    page: Path
    results: int
    signature: Signature | None
    """The results file's when the report was made from it."""
    seconds: float
    """How long the making took."""


@dataclass
class _Campaign:
    reports: list[Report] = field(default_factory=list)
    making: Future[Report] | None = None
    started: float = 0.0
    error: str | None = None


class ReportError(Exception):
    """The report could not be made: a line of the file is not a result, and the like."""


class ReportCache:
    def __init__(
        self,
        root: Path,
        panel: Callable[[str, int], Markup],
        min_seconds: float = MIN_SECONDS,
    ) -> None:
        """`panel(campaign_id, results)`: the live panel of a report of that many results."""
        self.root = root
        self.panel = panel
        self.min_seconds = min_seconds
        self._campaigns: dict[str, _Campaign] = {}
        self._lock = threading.Lock()
        self._makers = ThreadPoolExecutor(MAKERS, thread_name_prefix="evalrelay-report")

    def page(self, campaign_id: str, results: Path) -> tuple[Report | None, Future[Report] | None]:
        """The newest report of the campaign, and the making of a newer one when the file
        changed since (begun now, or already under way)."""
        with self._lock:
            entry = self._campaigns.setdefault(campaign_id, _Campaign())
            return self._refresh(campaign_id, entry, results)

    def poll(self, campaign_id: str, results: Path) -> tuple[Report | None, bool]:
        """For a page's poll: the newest report, making a newer one if it is due, and whether
        the newest is made from the file as it is now. Nothing is made for a campaign whose
        page nobody asked for."""
        with self._lock:
            entry = self._campaigns.get(campaign_id)
            if entry is None:
                return None, False
            newest, making = self._refresh(campaign_id, entry, results)
        current = making is None and newest is not None and newest.signature == signature(results)
        return newest, current

    def error(self, campaign_id: str) -> str | None:
        """Why the last making failed, if it did."""
        with self._lock:
            entry = self._campaigns.get(campaign_id)
            return entry.error if entry else None

    def reload_seconds(self, report: Report | None) -> float:
        """A page reloads itself no more often than it takes to make its report, thrice."""
        return max(RELOAD_SECONDS, 3 * report.seconds) if report else RELOAD_SECONDS

    def part(self, campaign_id: str, folder: str, name: str) -> Path | None:
        """A file of a report's parts folder, or None: nothing outside the cache is named."""
        if not PARTS.fullmatch(folder) or not PART.fullmatch(name):
            return None
        path = (self.root / campaign_id / folder / name).resolve()
        if not path.is_relative_to(self.root.resolve()) or not path.is_file():
            return None
        return path

    def close(self) -> None:
        """Wait for the makings under way (a server stopping mid-write leaves half a page)."""
        self._makers.shutdown(wait=True, cancel_futures=True)

    def _refresh(
        self, campaign_id: str, entry: _Campaign, results: Path
    ) -> tuple[Report | None, Future[Report] | None]:
        newest = entry.reports[-1] if entry.reports else None
        if entry.making is not None and not entry.making.done():
            return newest, entry.making
        if newest is not None and newest.signature == signature(results):
            return newest, None
        pause = max(self.min_seconds, 2 * newest.seconds) if newest else self.min_seconds
        tried = newest is not None or entry.error is not None
        if tried and time.monotonic() - entry.started < pause:
            return newest, None
        entry.started = time.monotonic()
        entry.making = self._makers.submit(self._make, campaign_id, entry, results)
        return newest, entry.making

    def _make(self, campaign_id: str, entry: _Campaign, results: Path) -> Report:
        started = time.monotonic()
        folder = self.root / campaign_id
        folder.mkdir(parents=True, exist_ok=True)
        token = secrets.token_hex(4)
        snapshot = folder / f".snapshot-{token}"
        snapshot.mkdir()
        copy = snapshot / f"{campaign_id}.jsonl"
        page = folder / f"report-{token}.html"
        try:
            made_from = signature(results)
            copy_whole_lines(results, copy)
            campaign = CampaignResults.load(copy)
            write_html(campaign, page, live=self.panel(campaign_id, len(campaign)))
        except Exception as exc:
            message = str(exc).replace(str(copy), str(results))
            with self._lock:
                entry.error = message
            raise ReportError(message) from exc
        finally:
            shutil.rmtree(snapshot, ignore_errors=True)
        report = Report(page, len(campaign), made_from, time.monotonic() - started)
        with self._lock:
            entry.reports.append(report)
            entry.error = None
            gone, entry.reports = entry.reports[:-KEPT], entry.reports[-KEPT:]
        for old in gone:
            old.page.unlink(missing_ok=True)
            shutil.rmtree(old.page.with_name(old.page.name + ".parts"), ignore_errors=True)
        return report


@contextlib.contextmanager
def cache_folder(home: Path) -> Iterator[Path]:
    """A folder of this server's own under `home/serve-cache` (mode 0700: reports hold
    results), removed when the server stops; those of servers that died are removed too."""
    caches = home / "serve-cache"
    caches.mkdir(parents=True, exist_ok=True)
    for old in caches.iterdir():
        owner = old.name.split("-", 1)[0]
        if owner.isdigit() and not psutil.pid_exists(int(owner)):
            shutil.rmtree(old, ignore_errors=True)
    folder = caches / f"{os.getpid()}-{secrets.token_hex(4)}"
    folder.mkdir(mode=0o700)
    try:
        yield folder
    finally:
        shutil.rmtree(folder, ignore_errors=True)

"""Writing a campaign's reports: the one place that names the report files.

Each report is written as it is made, piece by piece, so a campaign of 100,000 results is
never held whole, nor is its report. The HTML report of a big campaign is a page and a
folder of parts beside it (`html_parts`).
"""

from __future__ import annotations

import multiprocessing
import signal
import time
from collections.abc import Callable, Iterator
from multiprocessing.connection import Connection, wait
from multiprocessing.process import BaseProcess
from pathlib import Path

from evalrelay.bridge.private import keep_private
from evalrelay.bridge.reports.campaign import CampaignResults
from evalrelay.bridge.reports.html import html_report, write_html
from evalrelay.bridge.reports.junit import junit_chunks, junit_xml
from evalrelay.bridge.reports.markdown import markdown_chunks, markdown_report
from evalrelay.bridge.results.results_file import complete_summary
from evalrelay.bridge.results.summary import write_chunks_atomically

RENDERERS: dict[str, Callable[[CampaignResults], str]] = {
    "html": html_report,
    "junit": junit_xml,
    "markdown": markdown_report,
}
PIECES: dict[str, Callable[[CampaignResults], Iterator[str]]] = {
    "junit": junit_chunks,
    "markdown": markdown_chunks,
}
SUFFIXES = {"html": ".html", "junit": ".junit.xml", "markdown": ".md"}


def report_path(folder: Path, campaign_id: str, kind: str) -> Path:
    return folder / f"{campaign_id}{SUFFIXES[kind]}"


def write_report(campaign: CampaignResults, kind: str, path: Path) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    if kind == "html":
        return write_html(campaign, path)
    write_chunks_atomically(path, PIECES[kind](campaign))
    return path


def write_html_beside(results: Path) -> Path:
    """The HTML report next to the campaign's JSONL, as `run` and the watcher leave it."""
    campaign = CampaignResults.load(results)
    return write_report(campaign, "html", report_path(results.parent, campaign.campaign_id, "html"))


def ensure_html_beside(results: Path) -> Path:
    """The HTML report beside a complete JSONL, written unless one newer than it is there."""
    report = report_path(results.parent, results.stem, "html")
    if report.exists() and report.stat().st_mtime >= results.stat().st_mtime:
        return report
    return write_html_beside(results)


REPORT_APART_SECONDS = 3600
"""The most a child writing one campaign's HTML report may take."""

REPORTS_PER_CHILD = 50
"""How many reports one child writes before it ends and the next report starts another."""

BIG_RESULTS_BYTES = 64 * 1024 * 1024
"""A results file this large ends the child that wrote its report, right after it."""

IDLE_SECONDS = 60.0
"""A child that has written no report for this long ends at the service's next turn."""

_spawn = multiprocessing.get_context("spawn")  # the services have threads: no plain fork


class ReportsApart:
    """`complete_summary` and `ensure_html_beside` in a child process, for the services
    that run for days (the collector, the watcher), whose collectors only count.

    A report, as the statistics of a summary, passes over every line of its campaign and
    loads the statistics' libraries (a hundred MB), and the memory that pass takes would
    stay with the service (Python seldom gives it back), so its size would follow the
    largest campaign it ever finished. A child starts in about two seconds (its imports,
    the statistics' libraries among them), which a service finishing many small campaigns
    would pay for each: so one child writes the reports one after another, and ends after
    `REPORTS_PER_CHILD` of them, or after the report of a file over `BIG_RESULTS_BYTES`,
    taking what it held with it; an idle one ends too (`end_if_idle`), so a service at
    rest holds no second process. A report that fails raises with the child's exception;
    one that takes over `REPORT_APART_SECONDS`, or whose child dies, ends the child."""

    def __init__(self) -> None:
        self._child: BaseProcess | None = None
        self._pipe: Connection | None = None
        self._written = 0
        self._last = 0.0

    @property
    def pid(self) -> int | None:
        """The child's process id, while one is running."""
        return self._child.pid if self._child is not None else None

    def __call__(self, results: Path) -> Path:
        if self._child is not None and wait([self._child.sentinel], 0):
            self.close()  # it died between two reports: the next child writes this one
        pipe = self._pipe or self._start()
        try:
            pipe.send(str(results))
            written, said = self._reply()
        except BaseException:
            self.close()
            raise
        self._written, self._last = self._written + 1, time.monotonic()
        big = results.exists() and results.stat().st_size >= BIG_RESULTS_BYTES
        if self._written >= REPORTS_PER_CHILD or big:
            self.close()
        if not written:
            raise RuntimeError(f"the report of {results} was not written: {said}")
        return Path(said)

    def _start(self) -> Connection:
        mine, theirs = _spawn.Pipe()
        self._child = _spawn.Process(
            target=_write_reports, args=(theirs,), name="evalrelay-reports", daemon=True
        )
        self._child.start()
        theirs.close()
        self._pipe, self._written, self._last = mine, 0, time.monotonic()
        return mine

    def _reply(self) -> tuple[bool, str]:
        """The child's reply; else, once it ended or overran (then it is ended), why not.
        A dead child's pipe reads as ready, as its sentinel does."""
        child, pipe = self._child, self._pipe
        assert child is not None and pipe is not None
        deadline = time.monotonic() + REPORT_APART_SECONDS
        while not (ready := wait([pipe, child.sentinel], max(0.0, deadline - time.monotonic()))):
            if time.monotonic() >= deadline:
                self.close()
                return False, f"it took over {REPORT_APART_SECONDS} s"
        if pipe in ready:
            try:
                written, said = pipe.recv()
                return bool(written), str(said)
            except (EOFError, OSError):
                pass  # it died before replying: say so below
        child.join(5)
        self.close()
        return False, f"the process writing it ended (exit status {child.exitcode})"

    def end_if_idle(self) -> None:
        """End the child if it has written no report for `IDLE_SECONDS`: the services call
        this at each turn of their loop."""
        if self._child is not None and time.monotonic() - self._last >= IDLE_SECONDS:
            self.close()

    def close(self) -> None:
        """End the child, if any; the next report starts another."""
        child, pipe, self._child, self._pipe = self._child, self._pipe, None, None
        if pipe is not None:
            pipe.close()  # the child's next read ends it
        if child is not None:
            child.join(5)
            if child.is_alive():
                child.kill()
                child.join(5)


def _write_reports(pipe: Connection) -> None:
    """The child: each results path it is sent, its summary completed with its statistics
    (the services' collectors only count) and its report written, until the pipe closes.
    A Ctrl-C reaches the whole process group: the service decides when its child ends (it
    closes the pipe), so the child ignores it rather than die with a traceback."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    keep_private()  # it holds the service's environment: no other program may read it
    while True:
        try:
            path = pipe.recv()
        except (EOFError, OSError):
            return
        try:
            complete_summary(Path(path))
            reply: tuple[bool, str] = (True, str(ensure_html_beside(Path(path))))
        except Exception as exc:  # said to the service, which logs it
            reply = (False, f"{type(exc).__name__}: {exc}")
        pipe.send(reply)

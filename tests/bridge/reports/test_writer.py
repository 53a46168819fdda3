"""Report files: written whole, and as readable as the results they report on."""

from __future__ import annotations

import json
import os
import re
import signal
import stat
import threading
import time
from pathlib import Path

import psutil
import pytest

from evalrelay.bridge.reports import writer
from evalrelay.bridge.reports.campaign import CampaignResults
from evalrelay.bridge.reports.writer import (
    RENDERERS,
    ReportsApart,
    report_path,
    write_html_beside,
    write_report,
)
from evalrelay.bridge.results.results_file import ResultsFile, summary_on_disk, summary_path
from tests.bridge.reports.reporting import CAMPAIGN, long_answers, many_results, write_campaign
from tests.conftest import wait_for


@pytest.mark.parametrize(("umask", "mode"), [(0o022, 0o644), (0o077, 0o600)])
def test_reports_get_the_mode_the_results_file_gets(umask: int, mode: int, tmp_path: Path) -> None:
    previous = os.umask(umask)
    try:
        results = ResultsFile(tmp_path, "camp")
        results.append(CAMPAIGN)
        results.close()
        campaign = CampaignResults.load(results.path)
        written = [
            write_report(campaign, kind, report_path(tmp_path, "camp", kind)) for kind in RENDERERS
        ]
        written.append(write_report(campaign, "html", written[0]))  # replacing one
    finally:
        os.umask(previous)
    assert stat.S_IMODE(results.path.stat().st_mode) == mode
    assert {p.name: stat.S_IMODE(p.stat().st_mode) for p in written} == {
        "camp.html": mode,
        "camp.junit.xml": mode,
        "camp.md": mode,
    }
    assert sorted(p.name for p in tmp_path.iterdir()) == [
        "camp.html",
        "camp.jsonl",
        "camp.junit.xml",
        "camp.md",
    ]  # no temporary file left behind


@pytest.mark.parametrize(
    ("umask", "file_mode", "folder_mode"), [(0o022, 0o644, 0o755), (0o077, 0o600, 0o700)]
)
def test_the_parts_of_a_big_html_report_get_those_modes_too(
    umask: int, file_mode: int, folder_mode: int, tmp_path: Path
) -> None:
    campaign = CampaignResults.load(write_campaign(tmp_path, long_answers(many_results())))
    previous = os.umask(umask)
    try:
        write_report(campaign, "html", tmp_path / "camp.html")
    finally:
        os.umask(previous)
    folder = tmp_path / "camp.html.parts"
    assert stat.S_IMODE(folder.stat().st_mode) == folder_mode
    assert {stat.S_IMODE(p.stat().st_mode) for p in folder.iterdir()} == {file_mode}
    assert stat.S_IMODE((tmp_path / "camp.html").stat().st_mode) == file_mode
    assert sorted(p.name for p in tmp_path.iterdir()) == [
        "camp.html",
        "camp.html.parts",
        "camp.jsonl",
    ]


def test_a_report_written_apart_is_the_one_written_here(tmp_path: Path) -> None:
    """The services' report, written by a child process, is the page this process writes
    of the same results (but for the token each page is written with), and the child
    completes the counting summary with its statistics first; a report that cannot be
    written raises with why."""
    results = write_campaign(tmp_path / "apart", many_results(30))
    reports = ReportsApart()
    try:
        summary = summary_path(results.parent, "camp")
        summary.write_text(json.dumps({"expected": 30, "paid_again": {"late copy": 1}}))
        written = reports(results)
        assert written == report_path(results.parent, "camp", "html")
        completed = summary_on_disk(results, "camp", 30)  # what the collector counted: kept
        completed.paid_again = {"late copy": 1}
        assert json.loads(summary.read_text()) == completed.as_json()
        apart = untokened(written.read_text())
        written.unlink()
        assert untokened(write_html_beside(results).read_text()) == apart
        (tmp_path / "a-file").write_text("")
        with pytest.raises(RuntimeError, match=r"a-file/gone\.jsonl was not written: .*Error"):
            reports(tmp_path / "a-file" / "gone.jsonl")
    finally:
        reports.close()


def test_one_child_writes_report_after_report_until_it_has_written_its_share(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The child stays for the next report (its imports are paid once; a Ctrl-C does not
    end it), and a new one takes its place after `REPORTS_PER_CHILD` reports, after a big
    file's report, and after it died between two reports."""
    monkeypatch.setattr(writer, "REPORTS_PER_CHILD", 3)
    files = [write_campaign(tmp_path / f"c{i}", many_results(3)) for i in range(6)]
    reports = ReportsApart()
    try:
        reports(files[0])
        first = reports.pid
        assert first is not None
        os.kill(first, signal.SIGINT)  # a Ctrl-C to the service's group: the child stays
        reports(files[1])
        assert reports.pid == first  # the same child
        reports(files[2])
        assert reports.pid is None  # its third: it ended
        reports(files[3])
        second = reports.pid
        assert second not in (None, first)
        os.kill(second, signal.SIGKILL)
        os.waitid(os.P_PID, second, os.WEXITED | os.WNOWAIT)  # ended; its owner reaps it
        reports(files[4])  # a new child writes it
        assert reports.pid not in (None, second)
        monkeypatch.setattr(writer, "BIG_RESULTS_BYTES", 1)
        reports(files[5])
        assert reports.pid is None  # a big file's report: its child ended after it
        assert all(report_path(f.parent, "camp", "html").exists() for f in files)
    finally:
        reports.close()


def test_an_idle_child_ends_at_the_services_next_turn(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A service at rest holds no second process: its child ends once it has been idle
    `IDLE_SECONDS`, and not before."""
    results = write_campaign(tmp_path / "idle", many_results(3))
    reports = ReportsApart()
    try:
        reports(results)
        child = reports.pid
        reports.end_if_idle()
        assert child is not None and reports.pid == child  # written just now: it stays
        monkeypatch.setattr(writer, "IDLE_SECONDS", 0.2)
        time.sleep(0.3)
        reports.end_if_idle()
        assert reports.pid is None
        assert not psutil.pid_exists(child)  # ended, and reaped
    finally:
        reports.close()


def test_a_child_that_dies_mid_report_is_an_error_and_the_next_report_gets_a_new_one(
    tmp_path: Path,
) -> None:
    """Its child blocks reading a results file that is a FIFO and is killed there: the
    report raises saying so, and the next report is written by a new child."""
    stuck = tmp_path / "stuck"
    stuck.mkdir()
    fifo = stuck / "camp.jsonl"
    os.mkfifo(fifo)
    reports = ReportsApart()
    raised: list[BaseException] = []

    def report() -> None:
        try:
            reports(fifo)
        except RuntimeError as exc:
            raised.append(exc)

    thread = threading.Thread(target=report)
    try:
        thread.start()
        wait_for(lambda: reports.pid is not None, 30, "the child")
        pid = reports.pid
        assert pid is not None
        with fifo.open("w"):  # returns once the child opened it to read; it gets no line
            os.kill(pid, signal.SIGKILL)
        thread.join(30)
        assert not thread.is_alive()
        assert len(raised) == 1 and "ended (exit status -9)" in str(raised[0]), raised
        fine = write_campaign(tmp_path / "fine", many_results(3))
        assert reports(fine) == report_path(fine.parent, "camp", "html")
        assert reports.pid not in (None, pid)
    finally:
        reports.close()


def untokened(page: str) -> str:
    return re.sub(r'"token":"[0-9a-f]+"', '"token":""', page)

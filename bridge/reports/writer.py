"""Writing a campaign's reports: the one place that names the report files.

Each report is written as it is made, piece by piece, so a campaign of 100,000 results is
never held whole, nor is its report. The HTML report of a big campaign is a page and a
folder of parts beside it (`html_parts`).
"""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path

from evalrelay.bridge.reports.campaign import CampaignResults
from evalrelay.bridge.reports.html import html_report, write_html
from evalrelay.bridge.reports.junit import junit_chunks, junit_xml
from evalrelay.bridge.reports.markdown import markdown_chunks, markdown_report
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


def ensure_html_apart(results: Path) -> Path:
    """`ensure_html_beside`, in a child process: for the services that run for days (the
    collector, the watcher). A report passes over every line of its campaign, and the
    memory that pass takes would stay with the service (Python seldom gives it back), so
    its size would follow the largest campaign it ever finished. An error is raised with
    the child's last word (its exception)."""
    done = subprocess.run(
        [sys.executable, "-m", "evalrelay.bridge.reports.writer", str(results)],
        capture_output=True,
        text=True,
        timeout=REPORT_APART_SECONDS,
        stdin=subprocess.DEVNULL,
    )
    if done.returncode != 0:
        said = done.stderr.strip().splitlines() or [f"exit status {done.returncode}"]
        raise RuntimeError(f"the report of {results} was not written: {said[-1]}")
    return Path(done.stdout.strip())


if __name__ == "__main__":
    print(ensure_html_beside(Path(sys.argv[1])))

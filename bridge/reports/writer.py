"""Writing a campaign's reports: the one place that names the report files.

Each report is written as it is made, piece by piece, so a campaign of 100,000 results is
never held whole, nor is its report. The HTML report of a big campaign is a page and a
folder of parts beside it (`html_parts`).
"""

from __future__ import annotations

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

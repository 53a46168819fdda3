"""Report files: written whole, and as readable as the results they report on."""

from __future__ import annotations

import os
import re
import stat
from pathlib import Path

import pytest

from evalrelay.bridge.reports.campaign import CampaignResults
from evalrelay.bridge.reports.writer import (
    RENDERERS,
    ensure_html_apart,
    report_path,
    write_html_beside,
    write_report,
)
from evalrelay.bridge.results.results_file import ResultsFile
from tests.bridge.reports.reporting import CAMPAIGN, long_answers, many_results, write_campaign


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
    of the same results (but for the token each page is written with); a report that
    cannot be written raises with why."""
    results = write_campaign(tmp_path / "apart", many_results(30))
    written = ensure_html_apart(results)
    assert written == report_path(results.parent, "camp", "html")
    apart = untokened(written.read_text())
    written.unlink()
    assert untokened(write_html_beside(results).read_text()) == apart
    (tmp_path / "a-file").write_text("")
    with pytest.raises(RuntimeError, match=r"a-file/gone\.jsonl was not written: .*Error"):
        ensure_html_apart(tmp_path / "a-file" / "gone.jsonl")


def untokened(page: str) -> str:
    return re.sub(r'"token":"[0-9a-f]+"', '"token":""', page)

"""The report pages: made once per change of the file, no more often than allowed, the
one before kept for pages still open, and nothing named outside the cache."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest
from markupsafe import Markup

from evalrelay.bridge.live.report_cache import Report, ReportCache, ReportError, cache_folder
from evalrelay.bridge.results.result import Status
from tests.bridge.reports.reporting import CAMPAIGN, result, write_campaign


def panel(campaign_id: str, results: int) -> Markup:
    return Markup(f'<div id="test-panel">{results} results of {campaign_id}</div>')


@pytest.fixture
def results(tmp_path: Path) -> Path:
    return write_campaign(tmp_path / "results", CAMPAIGN[:4])


def made_again(cache: ReportCache, results: Path, last: Report) -> Report:
    """The next making, once its turn comes: twice as long after the last as that took."""
    time.sleep(2 * last.seconds + 0.01)
    newest, making = cache.page("camp", results)
    assert newest == last and making is not None
    return making.result(30)


def append(path: Path, line: str) -> None:
    with path.open("a") as out:
        out.write(line)


def test_a_report_is_made_once_and_again_only_when_the_file_changed(
    tmp_path: Path, results: Path
) -> None:
    cache = ReportCache(tmp_path / "cache", panel, min_seconds=0)
    newest, making = cache.page("camp", results)
    assert newest is None and making is not None
    first = making.result(30)
    page = first.page.read_text()
    assert first.results == 4 and "<h1>Campaign camp</h1>" in page
    assert '<div id="test-panel">4 results of camp</div>' in page
    assert cache.page("camp", results) == (first, None)
    assert cache.poll("camp", results) == (first, True)
    append(results, CAMPAIGN[4].model_dump_json() + "\n" + '{"torn": ')  # a line half-written
    second = made_again(cache, results, first)
    assert second.results == 5 and second.page != first.page
    assert cache.poll("camp", results) == (second, True)
    cache.close()


def test_a_changed_file_waits_its_turn_and_only_two_makings_are_kept(
    tmp_path: Path, results: Path
) -> None:
    cache = ReportCache(tmp_path / "cache", panel, min_seconds=60)
    first = cache.page("camp", results)[1].result(30)  # type: ignore[union-attr]
    append(results, CAMPAIGN[4].model_dump_json() + "\n")
    assert cache.page("camp", results) == (first, None)  # made less than a minute ago
    assert cache.poll("camp", results) == (first, False)
    cache.min_seconds = 0
    makings = [first]
    for extra in ("a", "b"):
        append(results, result(f"late-{extra}", "gpt", Status.OK).model_dump_json() + "\n")
        makings.append(made_again(cache, results, makings[-1]))
    assert [m.results for m in makings] == [4, 6, 7]
    kept = sorted(p.name for p in (tmp_path / "cache" / "camp").iterdir())
    assert kept == sorted([makings[1].page.name, makings[2].page.name])
    assert cache.poll("other", results) == (None, False)  # nobody asked for its page
    cache.close()


def test_a_file_that_is_not_results_is_said_with_its_own_path(
    tmp_path: Path, results: Path
) -> None:
    append(results, "not a result\n")
    cache = ReportCache(tmp_path / "cache", panel, min_seconds=60)
    making = cache.page("camp", results)[1]
    assert making is not None
    with pytest.raises(ReportError, match=rf"^{results}:5: not a result line"):
        making.result(30)
    assert str(results) in (cache.error("camp") or "")
    assert cache.page("camp", results) == (None, None)  # not tried again at once
    assert list((tmp_path / "cache" / "camp").iterdir()) == []  # no snapshot left behind
    cache.close()


def test_only_files_of_a_parts_folder_inside_the_cache_are_named(tmp_path: Path) -> None:
    cache = ReportCache(tmp_path / "cache", panel)
    parts = tmp_path / "cache" / "camp" / "report-0123abcd.html.parts"
    parts.mkdir(parents=True)
    (parts / "0000.js").write_text("evalrelayPart();")
    (parts / "0001.js").symlink_to("/etc/passwd")
    (tmp_path / "cache" / "camp" / "report-0123abcd.html").write_text("page")
    assert (
        cache.part("camp", "report-0123abcd.html.parts", "0000.js") == (parts / "0000.js").resolve()
    )
    for folder, name in [
        ("report-0123abcd.html.parts", "0001.js"),  # a link out of the cache
        ("report-0123abcd.html.parts", "0002.js"),
        ("report-0123abcd.html.parts", "../report-0123abcd.html"),
        ("..", "passwd"),
        ("report-0123abcd.html.parts", "..%2f..%2fetc%2fpasswd"),
    ]:
        assert cache.part("camp", folder, name) is None, (folder, name)
    assert cache.part("../../..", "report-0123abcd.html.parts", "0000.js") is None
    cache.close()


def test_a_servers_cache_folder_is_its_own_and_goes_with_it(tmp_path: Path) -> None:
    caches = tmp_path / "serve-cache"
    dead = subprocess.run(
        [sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True
    )
    (caches / f"{dead.stdout.strip()}-aaaa").mkdir(parents=True)  # a server that died
    (caches / "1-bbbb").mkdir()  # pid 1 lives
    with cache_folder(tmp_path) as folder:
        assert folder.parent == caches and folder.name.startswith(f"{os.getpid()}-")
        assert folder.stat().st_mode & 0o777 == 0o700
        assert sorted(p.name for p in caches.iterdir()) == sorted(["1-bbbb", folder.name])
    assert [p.name for p in caches.iterdir()] == ["1-bbbb"]

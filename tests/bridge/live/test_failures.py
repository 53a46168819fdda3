"""Failures as they arrive: each poll reads the results appended since the last one."""

from __future__ import annotations

from pathlib import Path

from evalrelay.bridge.live.failures import LISTED, new_failures
from evalrelay.bridge.results.result import Result, Status
from tests.bridge.reports.reporting import CAMPAIGN, graded, result


def append(path: Path, *results: Result) -> None:
    with path.open("a") as out:
        out.writelines(r.model_dump_json() + "\n" for r in results)


def test_each_poll_lists_the_failures_appended_since_the_last(tmp_path: Path) -> None:
    path = tmp_path / "camp.jsonl"
    append(path, *CAMPAIGN[:3])
    first = new_failures(path, 0, None)
    assert [(f.case_id, f.target, f.status, f.why) for f in first.failures] == [
        ("river", "gpt", "ok", "score 0.30; wrong city"),
        ("mountain", "gpt", "infra_error", "infra_error: connection refused by 127.0.0.1:9"),
    ]
    assert first.offset == path.stat().st_size and first.failed == 2
    nothing = new_failures(path, first.offset, first.file)
    assert (nothing.failures, nothing.offset) == ([], first.offset)
    append(path, *CAMPAIGN[3:])
    second = new_failures(path, first.offset, first.file)
    assert [(f.case_id, f.target, f.status) for f in second.failures] == [
        ("desert", "gpt", "model_failure"),
        ("river", "claude", "cancelled"),
    ]
    assert second.offset == path.stat().st_size


def test_a_first_poll_reads_only_the_end_of_a_big_file(tmp_path: Path) -> None:
    path = tmp_path / "camp.jsonl"
    early = [result(f"early-{i}", "gpt", Status.TIMEOUT, error="slow") for i in range(3)]
    passing = [graded(f"fine-{i}", "gpt", 0.9, answer="x" * 1000) for i in range(400)]
    late = [result("late", "gpt", Status.INFRA_ERROR, error="gone")]
    append(path, *early, *passing, *late)
    tail = new_failures(path, None, None)
    assert [f.case_id for f in tail.failures] == ["late"]
    assert tail.offset == path.stat().st_size


def test_only_the_newest_are_listed_and_all_are_counted(tmp_path: Path) -> None:
    path = tmp_path / "camp.jsonl"
    append(path, *[result(f"c{i}", "gpt", Status.TIMEOUT, error="late") for i in range(LISTED + 7)])
    found = new_failures(path, 0, None)
    assert found.failed == LISTED + 7
    assert [f.case_id for f in found.failures] == [f"c{i}" for i in range(7, LISTED + 7)]


def test_why_is_one_line_and_no_file_is_no_failure(tmp_path: Path) -> None:
    path = tmp_path / "camp.jsonl"
    append(path, result("c", "gpt", Status.INFRA_ERROR, error="first line\nsecond line"))
    assert [f.why for f in new_failures(path, 0, None).failures] == ["infra_error: first line"]
    missing = new_failures(tmp_path / "none.jsonl", 0, None)
    assert (missing.failures, missing.offset, missing.file) == ([], 0, None)
    assert new_failures(None, 0, None).failures == []

"""What a campaign's open results file keeps in memory: a few bytes a job, whatever the
campaign's size (a collector holds it open from the first result to the last)."""

from __future__ import annotations

import json
import tracemalloc
from datetime import UTC, datetime
from pathlib import Path

import pytest

from evalrelay.bridge.contract.job import job_id
from evalrelay.bridge.results import job_ids
from evalrelay.bridge.results.result import Result
from evalrelay.bridge.results.results_file import (
    ResultsFile,
    complete_summary,
    summary_on_disk,
    summary_path,
)
from tests.bridge.reports.reporting import many_results

NOW = datetime.now(UTC)


def mock_result(number: int) -> Result:
    """An ungraded answer, as a mock case without evaluators gives."""
    return Result.model_validate(
        {
            "campaign_id": "camp",
            "job_id": job_id("camp", "data", f"c{number}", "mock", 0),
            "case_id": f"c{number}",
            "dataset": "data",
            "target": "mock",
            "status": "ok",
            "answer": "an answer of some length " * 8,
            "raw_request": {"question": f"q{number}", "chat_prompt": None, "guidelines": ""},
            "started_at": NOW,
            "finished_at": NOW,
            "duration_ms": 3,
            "worker": "w",
        }
    )


def test_the_open_file_keeps_a_few_bytes_a_job(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The ids of the jobs written (to write each once) and the summary's counts: a dict of
    the ids took 120 bytes a job, and a collector 570 MiB at a million cases."""
    monkeypatch.setattr(job_ids, "RECENT", 128)  # few apart, so the buffer's share shows
    count = 3000
    file = ResultsFile(tmp_path, "camp", count)
    tracemalloc.start()
    try:
        for start in range(0, count, 500):
            file.append([mock_result(n) for n in range(start, start + 500)])
        held, _ = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
        file.close()
    assert held / count < 30, f"{held / count:.0f} bytes a job"
    assert len(file.job_ids) == count
    assert file.append([mock_result(7)]) == []  # written once, whatever comes twice


def test_the_summary_on_disk_counts_each_job_once(tmp_path: Path) -> None:
    file = ResultsFile(tmp_path, "camp", 3)
    file.append([mock_result(0), mock_result(1)])
    file.close()
    with (tmp_path / "camp.jsonl").open("a") as lines:  # a line written twice by hand
        lines.write(mock_result(1).model_dump_json() + "\n")
    assert summary_on_disk(tmp_path / "camp.jsonl", "camp", 3).results == 2


def test_a_counting_file_keeps_no_answers_and_its_summary_is_completed_from_disk(
    tmp_path: Path,
) -> None:
    """A service's collector counts (its summary has the counts a full one has, and no
    statistics); `complete_summary` then writes the statistics the file's lines give,
    keeping what only the collector knew, and leaves a complete summary alone."""
    results = many_results(300)
    counting = ResultsFile(tmp_path, "camp", 400, counting=True)
    counting.append(results)
    counting.write_summary()
    counting.close()
    full = summary_on_disk(tmp_path / "camp.jsonl", "camp", 400).as_json()
    assert full["statistics"]["targets"]  # graded results of three targets
    written = json.loads(summary_path(tmp_path, "camp").read_text())
    assert "statistics" not in written
    assert {k: v for k, v in full.items() if k != "statistics"} == written
    with pytest.raises(ValueError, match="keeps no answers"):
        counting.summary.statistics()

    summary_path(tmp_path, "camp").write_text(json.dumps({**written, "paid_again": {"retry": 2}}))
    complete_summary(tmp_path / "camp.jsonl")
    completed = json.loads(summary_path(tmp_path, "camp").read_text())
    assert completed == {**full, "paid_again": {"retry": 2}}
    summary_path(tmp_path, "camp").write_text(json.dumps({**completed, "results": -1}))
    complete_summary(tmp_path / "camp.jsonl")  # it has its statistics: left as it is
    assert json.loads(summary_path(tmp_path, "camp").read_text())["results"] == -1

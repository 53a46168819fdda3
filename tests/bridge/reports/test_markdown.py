"""The Markdown report's failures: one row per case and target, repeats counted."""

from __future__ import annotations

from pathlib import Path

from bridge.reports.campaign import CampaignResults
from bridge.reports.markdown import markdown_report
from bridge.results.result import Status
from tests.bridge.reports.reporting import graded, result, write_campaign


def test_repeats_of_a_case_make_one_row_with_their_spread(tmp_path: Path) -> None:
    results = [
        graded("capital", "gpt", 0.3, repeat=0, job_id="g0"),
        graded("capital", "gpt", 0.3, repeat=1, job_id="g1"),
        graded("capital", "gpt", 0.9, repeat=2, job_id="g2"),
        graded("capital", "claude", 0.2, repeat=0, job_id="c0"),
        graded("capital", "claude", 0.2, repeat=1, job_id="c1"),
        result("capital", "claude", Status.TIMEOUT, repeat=2, job_id="c2", error="too slow"),
        graded("river", "gpt", 0.95, repeat=0, job_id="r0"),
        graded("river", "gpt", 0.95, repeat=1, job_id="r1"),
    ]
    text = markdown_report(CampaignResults.load(write_campaign(tmp_path, results)))
    rows = [line for line in text.splitlines() if line.startswith(("| capital ", "| river "))]
    assert rows == [
        "| capital | claude | 3 | 0/3 | 0.20 | 2 failed, 1 error | 2 ok, 1 timeout "
        "| wrong city (2 runs); too slow |",
        "| capital | gpt | 3 | 1/3 | 0.50 (0.30 to 0.90) | 2 failed, 1 passed | ok "
        "| wrong city (2 runs) |",
    ]  # the river, passed every time, is no failure


def test_cached_answers_are_counted_and_marked(tmp_path: Path) -> None:
    results = [
        graded("capital", "gpt", 0.3, artifacts={"cached": True, "request_id": "req-first"}),
        graded("river", "gpt", 0.3),
    ]
    text = markdown_report(CampaignResults.load(write_campaign(tmp_path, results)))
    assert "1 answered from the response cache (`run --cache`)." in text
    assert "| capital | gpt | 1 (1 cached) | 0/1 | 0.30 | failed | ok | wrong city |" in text
    assert "| river | gpt | 1 | 0/1 | 0.30 | failed | ok | wrong city |" in text

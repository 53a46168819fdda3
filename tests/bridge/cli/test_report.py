"""`evalrelay report` and `evalrelay compare` on campaigns found by id or by path, and the
HTML report that `evalrelay run` leaves beside the results."""

from __future__ import annotations

import xml.etree.ElementTree as ET
from pathlib import Path

import pytest
from click.testing import CliRunner

from bridge.cli.main import cli
from tests.bridge.reports.reporting import CAMPAIGN, graded, write_campaign
from tests.conftest import Processes, WriteFiles


def test_report_by_id_writes_all_three_beside_the_results(tmp_path: Path) -> None:
    results = tmp_path / "results"
    write_campaign(results, CAMPAIGN)
    outcome = CliRunner().invoke(cli, ["report", "camp", "--results", str(results)])
    assert outcome.exit_code == 0, outcome.output
    for name in ("camp.html", "camp.junit.xml", "camp.md"):
        assert (results / name).is_file(), outcome.output
    assert f"junit: {results / 'camp.junit.xml'}" in outcome.output
    assert "| gpt | 4 | 1/2 | 50% | 0.600 |" in outcome.output  # the summary, on stdout
    assert ET.parse(results / "camp.junit.xml").getroot().attrib["errors"] == "1"


def test_report_by_path_writes_only_what_was_asked(tmp_path: Path) -> None:
    path = write_campaign(tmp_path / "results", CAMPAIGN)
    junit = tmp_path / "ci" / "evals.xml"
    outcome = CliRunner().invoke(cli, ["report", str(path), "--junit", str(junit)])
    assert outcome.exit_code == 0, outcome.output
    assert junit.is_file()
    assert not (tmp_path / "results" / "camp.html").exists()


def test_unknown_campaign_names_the_folder_and_recent_ones(tmp_path: Path) -> None:
    results = tmp_path / "results"
    write_campaign(results, CAMPAIGN)
    outcome = CliRunner().invoke(cli, ["report", "nope", "--results", str(results)])
    assert outcome.exit_code != 0
    assert f"no results for campaign 'nope' in {results}; recent campaigns there: camp" in str(
        outcome.exception
    )


def test_compare_lists_changed_cases_and_target_rates(tmp_path: Path) -> None:
    results = tmp_path / "results"
    write_campaign(results, CAMPAIGN, "before")
    write_campaign(results, [graded("capital", "gpt", 0.2), graded("river", "gpt", 0.9)], "after")
    outcome = CliRunner().invoke(cli, ["compare", "before", "after", "--results", str(results)])
    assert outcome.exit_code == 0, outcome.output
    lines = [" ".join(line.replace("│", " ").split()) for line in outcome.output.splitlines()]
    assert "gpt 50% → 50% 0.600 → 0.550 1 1" in lines
    assert "capital gpt regressed ok 0.90 ok 0.20" in lines
    assert "river gpt improved ok 0.30 ok 0.90" in lines
    assert "mountain gpt gone infra_error -" in lines


def test_run_leaves_an_html_report_and_counts_passes(
    project: WriteFiles, processes: Processes
) -> None:
    root = project(
        {
            "targets.yaml": "targets:\n  - {name: paris, provider: mock, response: Paris}\n",
            "evals.yaml": (
                "target: paris\n"
                "evaluators: [{type: contains, value: Paris}]\n"
                "evalcases:\n"
                "  - {id: yes, input_messages: [{role: user, content: the capital}]}\n"
                "  - id: no\n"
                "    evaluators: [{type: contains, value: Rome}]\n"
                "    input_messages: [{role: user, content: the capital of Italy}]\n"
            ),
        }
    )
    run = processes.start(
        "run", str(root / "evals.yaml"), name="run", extra_env={"EVALRELAY_REDIS_URL": ""}
    )
    assert run.wait(120) == 0, processes.log("run")
    (page,) = (root / "results").glob("*.html")
    html = page.read_text()
    assert "1/2" in html and "answer contains &#39;Rome&#39;" in html
    assert "passed" in processes.log("run") and "1/2" in processes.log("run")


def test_report_finds_a_campaign_of_a_project_below_the_current_folder(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    write_campaign(tmp_path / "examples" / "results", CAMPAIGN)
    (tmp_path / ".git").mkdir()  # the current folder is a project root of its own
    monkeypatch.chdir(tmp_path)
    outcome = CliRunner().invoke(cli, ["report", "camp", "--markdown", "summary.md"])
    assert outcome.exit_code == 0, outcome.output
    assert "| gpt | 4 | 1/2 | 50% | 0.600 |" in (tmp_path / "summary.md").read_text()

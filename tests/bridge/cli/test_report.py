"""`evalrelay report` and `evalrelay compare` on campaigns found by id, `latest`, name or
path; compare's exit status and two targets side by side; and the HTML report that
`evalrelay run` leaves beside the results."""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest
import redis
from click.testing import CliRunner

from evalrelay.bridge.cli.main import cli
from evalrelay.bridge.results.result import Cost
from tests.bridge.queue.test_campaigns import add_campaign
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
    assert (
        "| gpt | 4 | 1/2 | 50% [9%\u201391%] | 0.600 [0.00\u20131.00] |" in outcome.output
    )  # the summary, on stdout
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


def compare(*args: str) -> tuple[int, list[str]]:
    """`evalrelay compare` in this process: its exit status and its lines, table rules gone
    and the en dash of an interval as a hyphen."""
    # As in a CI job's log: no terminal, no COLUMNS (pytest-xdist sets 80 in its workers).
    runner = CliRunner(env={"COLUMNS": None})
    outcome = runner.invoke(cli, ["compare", *args], catch_exceptions=False)
    output = outcome.output.replace("\u2013", "-")
    lines = [" ".join(line.replace("│", " ").split()) for line in output.splitlines()]
    return outcome.exit_code, lines


def test_compare_lists_changed_cases_and_target_rates_and_exits_1_on_a_regression(
    tmp_path: Path,
) -> None:
    results = tmp_path / "results"
    write_campaign(results, CAMPAIGN, "before")
    write_campaign(results, [graded("capital", "gpt", 0.2), graded("river", "gpt", 0.9)], "after")
    code, lines = compare("before", "after", "--results", str(results))
    assert code == 1, lines
    # Outside a terminal the intervals are whole, on one line.
    assert "gpt 50% [9%-91%] → 50% [9%-91%] 0.600 [0.00-1.00] → 0.550 [0.00-1.00] 1 1" in lines
    assert "capital gpt regressed ok 0.90 ok 0.20" in lines
    assert "river gpt improved ok 0.30 ok 0.90" in lines
    assert "mountain gpt gone infra_error -" in lines
    assert lines[-1] == (
        "1 of 6 results regressed (1 passed before and not now); also 1 improved, 4 gone"
    )


def test_compare_exits_0_when_nothing_regressed(tmp_path: Path) -> None:
    results = tmp_path / "results"
    write_campaign(results, [graded("capital", "gpt", 0.9), graded("river", "gpt", 0.3)], "a")
    write_campaign(results, [graded("capital", "gpt", 0.92), graded("river", "gpt", 0.9)], "b")
    code, lines = compare("a", "b", "--results", str(results))
    assert code == 0, lines
    assert lines[-1] == "no regression in 2 results (1 improved)"


def test_compare_exits_1_on_a_score_drop_beyond_the_tolerance(tmp_path: Path) -> None:
    results = tmp_path / "results"
    write_campaign(results, [graded("capital", "gpt", 0.95), graded("river", "gpt", 0.9)], "a")
    write_campaign(results, [graded("capital", "gpt", 0.85), graded("river", "gpt", 0.85)], "b")
    code, lines = compare("a", "b", "--results", str(results))
    assert code == 1, lines
    assert "capital gpt regressed ok 0.95 ok 0.85" in lines
    assert "river gpt" not in " ".join(lines)  # 0.05 lower: within the tolerance
    assert lines[-1] == "1 of 2 results regressed (1 scored more than 0.05 lower)"
    code, lines = compare("a", "b", "--results", str(results), "--tolerance", "0.1")
    assert code == 0, lines
    assert lines[-1] == "no regression in 2 results"


TWO_TARGETS = [
    graded("capital", "gpt", 0.9),
    graded("capital", "claude", 0.5),
    graded("river", "gpt", 0.3),
    graded("river", "claude", 0.95),
    graded("lake", "gpt", 0.9),
    graded("lake", "claude", 0.9),
]


def test_compare_puts_two_targets_of_one_campaign_side_by_side(tmp_path: Path) -> None:
    results = tmp_path / "results"
    write_campaign(results, TWO_TARGETS, "both")
    for args in (["both:gpt", "both:claude"], ["both", "--targets", "gpt", "claude"]):
        code, lines = compare(*args, "--results", str(results))
        assert code == 1, lines
        assert "both:gpt → both:claude" in lines
        whole = "gpt → claude 67% [21%-94%] → 67% [21%-94%] 0.700 [0.00-1.00] → 0.783 [0.17-1.00]"
        assert f"{whole} 1 1" in lines
        assert any(
            line.startswith("claude vs gpt: no detectable difference, mean") for line in lines
        )
        assert "capital gpt → claude regressed ok 0.90 ok 0.50" in lines
        assert "river gpt → claude improved ok 0.30 ok 0.95" in lines
        assert lines[-1] == (
            "1 of 3 results regressed (1 passed before and not now); also 1 improved"
        )


def test_compare_json_of_two_campaigns_pairs_each_target_on_its_shared_cases(
    tmp_path: Path,
) -> None:
    """Sides are `CAMPAIGN:TARGET`; a case of one campaign only is in its side's numbers
    and not in the pair; the difference is AFTER less BEFORE."""
    results = tmp_path / "results"
    write_campaign(results, TWO_TARGETS, "before")
    after = [graded("capital", "gpt", 0.5), graded("river", "gpt", 0.3), graded("sea", "gpt", 1)]
    write_campaign(results, after, "after")
    outcome = CliRunner().invoke(
        cli, ["compare", "before", "after", "--json", "--results", str(results)]
    )
    found = json.loads(outcome.output)
    assert outcome.exit_code == 1  # a case regressed, and no --gate
    assert sorted(found["targets"]) == ["after:gpt", "before:gpt"]  # claude is in one only
    assert found["targets"]["after:gpt"]["n"] == 3
    (pair,) = found["pairs"]
    assert (pair["a"], pair["b"], pair["n_paired"]) == ("before:gpt", "after:gpt", 3 - 1)
    assert pair["difference"] == pytest.approx(((0.5 - 0.9) + (0.3 - 0.3)) / 2)
    assert pair["p_value_holm"] == pair["p_value"]  # one pair: nothing to correct
    assert found["cases"]["regressed"] == 1 and found["gate"]["failed"] == []


def test_compare_shows_what_each_side_cost(tmp_path: Path) -> None:
    results = tmp_path / "results"
    cheap, dear = Cost(usd=0.25, source="vendor"), Cost(usd=0.75, source="genai-prices")
    before = [graded(c, "gpt", 0.9, cost=cheap) for c in ("capital", "river")]
    after = [graded("capital", "gpt", 0.9, cost=dear), graded("river", "gpt", 0.9)]
    write_campaign(results, before, "before")
    write_campaign(results, after, "after")
    code, lines = compare("before", "after", "--results", str(results))
    assert code == 0, lines
    shown = " ".join(lines)
    assert "cost" in shown and "$0.5000 →" in shown and "→ $0.7500" in shown, lines


def test_compare_with_one_campaign_and_no_targets_says_what_it_needs(tmp_path: Path) -> None:
    results = tmp_path / "results"
    write_campaign(results, TWO_TARGETS, "both")
    outcome = CliRunner().invoke(cli, ["compare", "both", "--results", str(results)])
    assert "compare needs two campaigns (BEFORE AFTER), two targets of one" in str(
        outcome.exception
    )
    outcome = CliRunner().invoke(
        cli, ["compare", "both:gpt", "both:mistral", "--results", str(results)]
    )
    assert "campaign both has no results of target 'mistral'; its targets: claude, gpt" in str(
        outcome.exception
    )


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
    assert run.wait(120) == 1, processes.log("run")  # one case failed
    (page,) = (root / "results").glob("*.html")
    html = page.read_text()
    assert "1/2" in html and "answer does not contain 'Rome'" in html  # in the page's data
    assert "passed" in processes.log("run") and "1/2" in processes.log("run")


def test_report_finds_a_campaign_of_a_project_below_the_current_folder(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    write_campaign(tmp_path / "examples" / "results", CAMPAIGN)
    (tmp_path / ".git").mkdir()  # the current folder is a project root of its own
    monkeypatch.chdir(tmp_path)
    outcome = CliRunner().invoke(cli, ["report", "camp", "--markdown", "summary.md"])
    assert outcome.exit_code == 0, outcome.output
    assert (
        "| gpt | 4 | 1/2 | 50% [9%\u201391%] | 0.600 [0.00\u20131.00] |"
        in (tmp_path / "summary.md").read_text()
    )


def test_report_and_compare_take_latest_a_name_or_the_start_of_an_id(
    tmp_path: Path, client: redis.Redis, redis_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Ids Redis knows: found in the folder `run` wrote them to, wherever the command runs."""
    results = tmp_path / "elsewhere" / "results"
    old_id, new_id = "geo-20260301-120000-aaaa", "geo-20260301-121000-bbbb"
    write_campaign(results, [graded("capital", "gpt", 0.9)], old_id)
    write_campaign(results, [graded("capital", "gpt", 0.95)], new_id)
    add_campaign(client, old_id, 0, out_dir=str(results), name="nightly")
    add_campaign(client, new_id, 10, out_dir=str(results))
    monkeypatch.setenv("EVALRELAY_REDIS_URL", redis_url)
    monkeypatch.chdir(tmp_path)
    (tmp_path / ".git").mkdir()
    outcome = CliRunner().invoke(cli, ["report", "latest", "--markdown", "latest.md"])
    assert outcome.exit_code == 0, outcome.output
    assert new_id in (tmp_path / "latest.md").read_text()
    code, lines = compare("nightly", "geo-20260301-12100")
    assert code == 0, lines
    assert f"{old_id} → {new_id}" in lines
    outcome = CliRunner().invoke(cli, ["report", "geo-2026"])
    assert "'geo-2026' starts 2 campaign ids" in str(outcome.exception)

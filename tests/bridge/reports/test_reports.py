"""Reports of a hand-written campaign: JUnit against the schema, Markdown line by line, the
HTML page rendered by headless Chromium, and the comparison of two campaigns."""

from __future__ import annotations

import os
import re
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest
import xmlschema

from evalrelay.bridge.reports.campaign import CampaignResults
from evalrelay.bridge.reports.compare import Change, compare
from evalrelay.bridge.reports.html import html_report
from evalrelay.bridge.reports.junit import junit_xml
from evalrelay.bridge.reports.markdown import markdown_report
from evalrelay.bridge.reports.outcomes import Outcome, outcome
from evalrelay.bridge.reports.writer import ensure_html_beside
from evalrelay.bridge.results.result import Status
from tests.bridge.reports.reporting import (
    CAMPAIGN,
    OPEN_ALL,
    graded,
    rendered,
    result,
    with_script,
    write_campaign,
)

SCHEMA = xmlschema.XMLSchema(Path(__file__).with_name("junit.xsd"))


@pytest.fixture
def campaign(tmp_path: Path) -> CampaignResults:
    return CampaignResults.load(write_campaign(tmp_path / "results", CAMPAIGN))


def test_outcomes_separate_the_model_from_the_infrastructure(campaign: CampaignResults) -> None:
    assert {(r.case_id, r.target): outcome(r) for r in campaign.results()} == {
        ("capital", "gpt"): Outcome.PASSED,
        ("river", "gpt"): Outcome.FAILED,
        ("mountain", "gpt"): Outcome.ERROR,
        ("desert", "gpt"): Outcome.FAILED,
        ("capital", "claude"): Outcome.UNGRADED,
        ("river", "claude"): Outcome.CANCELLED,
    }


def test_junit_is_valid_and_tells_errors_from_failures(campaign: CampaignResults) -> None:
    xml = junit_xml(campaign)
    SCHEMA.validate(xml)
    root = ET.fromstring(xml)
    assert root.attrib | {"time": "-"} == {
        "name": "camp",
        "tests": "6",
        "failures": "2",
        "errors": "1",
        "skipped": "1",
        "time": "-",
    }
    suites = {s.attrib["name"]: s for s in root}
    gpt = suites["gpt"]
    assert (gpt.attrib["tests"], gpt.attrib["failures"], gpt.attrib["errors"]) == ("4", "2", "1")
    cases = {c.attrib["name"]: c for c in gpt}
    error = cases["mountain"].find("error")
    assert error is not None and error.attrib == {
        "message": "connection refused by 127.0.0.1:9",
        "type": "infra_error",
    }
    failure = cases["river"].find("failure")
    assert failure is not None
    assert failure.attrib["message"] == "score 0.30 is below the pass threshold"
    assert failure.text == "miss: wrong city\nchecked by hand"
    assert cases["desert"].find("failure") is not None  # a model failure is the model's
    assert suites["claude"].find("testcase[@name='river']/skipped") is not None
    assert cases["capital"].find("system-out").text == "Answer to capital"  # type: ignore[union-attr]


def test_junit_schema_rejects_a_malformed_report() -> None:
    broken = '<testsuites name="x" tests="one" failures="0" errors="0" skipped="0" time="0"/>'
    assert not SCHEMA.is_valid(broken)


def test_markdown_summary_and_failures(campaign: CampaignResults) -> None:
    text = markdown_report(campaign)
    assert (
        "| target | results | passed | pass rate | mean score | cancelled | infra_error | "
        "model_failure | ok |" in text
    )
    assert "| claude | 2 | 0/0 | - | - | 1 | 0 | 0 | 1 |" in text
    assert "| gpt | 4 | 1/2 | 50% [9%\u201391%] | 0.600 [0.00\u20131.00] | 0 | 1 | 1 | 2 |" in text
    assert "| case | target | runs | passed | score | outcome | status | why |" in text
    assert (
        "| mountain | gpt | 1 | 0/1 | - | error | infra_error | connection refused by 127.0.0.1:9 |"
        in text
    )
    assert "| river | gpt | 1 | 0/1 | 0.30 | failed | ok | wrong city |" in text


def test_html_report_in_a_real_browser(campaign: CampaignResults, tmp_path: Path) -> None:
    page = tmp_path / "camp.html"
    page.write_text(html_report(campaign))

    dom = rendered(page, "#view=list", tmp_path)
    assert "<h1>Campaign camp</h1>" in dom
    assert re.search(
        r'<tr data-target="gpt"><td>gpt</td><td class="num">4</td>\s*'
        r'<td class="num">1/2</td>\s*<td class="num pass-rate">50%</td>\s*'
        r'<td class="num mean-score">0.600</td>',
        dom,
    )
    assert "showing 6 of 6" in dom
    assert "connection refused by 127.0.0.1:9" in dom
    assert "<pre>Be brief.</pre>" not in dom  # details are shown when a row is opened

    opened = rendered(with_script(page, OPEN_ALL), "#view=list", tmp_path)
    # The index, the one part of details, where the parts are, and the code: the answer
    # stayed text.
    assert opened.count("<script") == 5  # and the opening script
    assert "&lt;script&gt;alert('x')&lt;/script&gt; The Thames" in opened
    assert opened.count('<div class="role">system</div><pre>Be brief.</pre>') == 6  # as sent

    failed = rendered(page, "#view=list&outcome=failed&target=gpt", tmp_path)
    assert "showing 2 of 6" in failed
    shown = re.findall(r'<tbody class="case" data-target="(\w+)" data-outcome="(\w+)"', failed)
    assert sorted(shown) == [("gpt", "failed"), ("gpt", "failed")]  # the others not there


def test_compare_names_what_got_better_and_worse(tmp_path: Path) -> None:
    before = CampaignResults.load(write_campaign(tmp_path, CAMPAIGN, "before"))
    after = CampaignResults.load(
        write_campaign(
            tmp_path,
            [
                graded("capital", "gpt", 0.5),  # passed -> failed
                graded("river", "gpt", 0.95),  # failed -> passed
                result("mountain", "gpt", Status.TIMEOUT, error="too slow"),  # error -> error
                result("desert", "gpt", Status.MODEL_FAILURE, answer="", error="empty answer"),
                graded("lake", "gpt", 1.0),
            ],
            "after",
        )
    )
    changes = {(c.case_id, c.target): c.change for c in compare(before, after)}
    assert changes == {
        ("capital", "gpt"): Change.REGRESSED,
        ("river", "gpt"): Change.IMPROVED,
        ("mountain", "gpt"): Change.CHANGED,
        ("desert", "gpt"): Change.SAME,
        ("lake", "gpt"): Change.NEW,
        ("capital", "claude"): Change.GONE,
        ("river", "claude"): Change.GONE,
    }


def test_ensure_html_writes_a_missing_or_stale_report_and_keeps_a_fresh_one(
    tmp_path: Path,
) -> None:
    results = write_campaign(tmp_path, [result("a", "t", Status.OK)])
    report = ensure_html_beside(results)
    assert report == tmp_path / "camp.html" and report.exists()
    os.utime(report, (1, 1))  # older than the results: written again
    ensure_html_beside(results)
    fresh = report.stat().st_mtime
    assert fresh > 1
    ensure_html_beside(results)
    assert report.stat().st_mtime == fresh

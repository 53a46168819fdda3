"""JUnit XML: what a failure's text tells CI beyond the score."""

from __future__ import annotations

import xml.etree.ElementTree as ET
from pathlib import Path

from evalrelay.bridge.reports.campaign import CampaignResults
from evalrelay.bridge.reports.junit import CACHED, junit_xml
from evalrelay.bridge.results.result import Status
from tests.bridge.reports.reporting import conversation, graded, result, write_campaign
from tests.bridge.reports.test_reports import SCHEMA


def test_a_failure_answered_from_the_cache_says_so(tmp_path: Path) -> None:
    results = [
        graded("capital", "gpt", 0.3, artifacts={"cached": True, "request_id": "req-first"}),
        graded("river", "gpt", 0.3),
    ]
    root = ET.fromstring(junit_xml(CampaignResults.load(write_campaign(tmp_path, results))))
    texts = {c.attrib["name"]: c.find("failure").text for c in root.iter("testcase")}  # type: ignore[union-attr]
    assert texts == {
        "capital": f"miss: wrong city\nchecked by hand\n{CACHED}",
        "river": "miss: wrong city\nchecked by hand",
    }


def test_control_characters_of_agent_output_are_shown_and_the_xml_parses(
    tmp_path: Path,
) -> None:
    """XML 1.0 cannot hold ESC, BEL or NUL even escaped: they are written as `\\x1b` and
    the like, and tab, newline and carriage return stay as they are."""
    results = [
        graded(
            "capital\x1b]0;pwned\x07",
            "gpt",
            0.3,
            answer="\x1b[31mParis\x1b[0m\tthe city\r\nend\x00",
        ).model_copy(update={"reasoning": "saw \x1b[2J"}),
        result("river\x08", "gpt", Status.INFRA_ERROR, error="refused \x1b[1mnow\x1b[0m"),
    ]
    xml = junit_xml(CampaignResults.load(write_campaign(tmp_path, results)))
    SCHEMA.validate(xml)
    cases = {c.attrib["name"]: c for c in ET.fromstring(xml).iter("testcase")}
    assert set(cases) == {"capital\\x1b]0;pwned\\x07", "river\\x08"}
    capital = cases["capital\\x1b]0;pwned\\x07"]
    assert capital.find("system-out").text == "\\x1b[31mParis\\x1b[0m\tthe city\r\nend\\x00"  # type: ignore[union-attr]
    assert capital.find("failure").text == "miss: wrong city\nsaw \\x1b[2J"  # type: ignore[union-attr]
    error = cases["river\\x08"].find("error")
    assert error is not None and error.attrib["message"] == "refused \\x1b[1mnow\\x1b[0m"


def test_a_conversation_lists_its_turns_with_their_verdicts(tmp_path: Path) -> None:
    text = junit_xml(CampaignResults.load(write_campaign(tmp_path, [conversation("tutor", "gpt")])))
    SCHEMA.validate(text)
    (case,) = ET.fromstring(text).iter("testcase")
    failure = case.find("failure").text  # type: ignore[union-attr]
    assert failure is not None
    assert failure.splitlines() == [
        "miss: wrong city",
        "turn 2: failed, score 0.00: Rome",
        "turn 3: skipped, score 0.00: turn 2 failed and on_turn_failure is stop",
        "checked by hand",
    ]
    assert case.find("system-out").text == (  # type: ignore[union-attr]
        "turn 1: passed, score 1.00\nuser: Capital of France?\nassistant: Paris\n"
        "turn 2: failed, score 0.00: Rome\nuser: And of Italy?\nassistant: Milan\n"
        "turn 3: skipped, score 0.00: turn 2 failed and on_turn_failure is stop\n"
        "user: Thanks!\nassistant: "
    )

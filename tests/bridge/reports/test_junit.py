"""JUnit XML: what a failure's text tells CI beyond the score."""

from __future__ import annotations

import xml.etree.ElementTree as ET
from pathlib import Path

from bridge.reports.campaign import CampaignResults
from bridge.reports.junit import CACHED, junit_xml
from tests.bridge.reports.reporting import graded, write_campaign


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

"""JUnit XML for CI: a test suite per target, a test case per result.

Infrastructure statuses are `<error>`s, low scores and model failures `<failure>`s, and
cancelled jobs `<skipped>`: CI then tells "the model got worse" from "the run broke".
"""

from __future__ import annotations

import xml.etree.ElementTree as ET
from itertools import groupby

from bridge.reports.campaign import CampaignResults, Outcome, is_cached, outcome
from bridge.results.result import Result

CACHED = "answer served from the response cache (run --cache), not by a call of this job"


def junit_xml(campaign: CampaignResults) -> str:
    root = ET.Element("testsuites", name=campaign.campaign_id)
    totals = {"tests": 0, "failures": 0, "errors": 0, "skipped": 0, "time": 0.0}
    for target, group in groupby(campaign.results, key=lambda r: r.target):
        results = list(group)
        outcomes = [outcome(r) for r in results]
        counts = {
            "tests": len(results),
            "failures": outcomes.count(Outcome.FAILED),
            "errors": outcomes.count(Outcome.ERROR),
            "skipped": outcomes.count(Outcome.CANCELLED),
            "time": sum(r.duration_ms for r in results) / 1000,
        }
        for key, value in counts.items():
            totals[key] += value
        attributes = {k: _number(v) for k, v in counts.items()}
        attributes["timestamp"] = min(r.started_at for r in results).strftime("%Y-%m-%dT%H:%M:%S")
        suite = ET.SubElement(root, "testsuite", {"name": target, **attributes})
        for result in results:
            _testcase(suite, result)
    root.attrib.update({k: _number(v) for k, v in totals.items()})
    ET.indent(root)
    return '<?xml version="1.0" encoding="UTF-8"?>\n' + ET.tostring(root, encoding="unicode") + "\n"


def _testcase(suite: ET.Element, result: Result) -> None:
    name = result.case_id + (f" #{result.repeat}" if result.repeat else "")
    case = ET.SubElement(
        suite,
        "testcase",
        name=name,
        classname=f"{result.dataset}.{result.target}",
        time=_number(result.duration_ms / 1000),
    )
    kind = outcome(result)
    message = result.error.message if result.error else ""
    if kind is Outcome.ERROR:
        ET.SubElement(case, "error", message=message, type=result.status.value).text = message
    elif kind is Outcome.CANCELLED:
        ET.SubElement(case, "skipped", message="cancelled")
    elif kind is Outcome.FAILED:
        if result.score is not None:
            message = f"score {result.score:.2f} is below the pass threshold"
        failure = ET.SubElement(case, "failure", message=message, type=result.status.value)
        failure.text = "\n".join(
            [
                *(f"miss: {m}" for m in result.misses),
                *([result.reasoning] if result.reasoning else []),
                *([CACHED] if is_cached(result) else []),
            ]
        )
    if result.answer:
        ET.SubElement(case, "system-out").text = result.answer


def _number(value: float) -> str:
    return str(value) if isinstance(value, int) else f"{value:.3f}"

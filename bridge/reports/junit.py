"""JUnit XML for CI: a test suite per target, a test case per result.

Infrastructure statuses are `<error>`s, low scores and model failures `<failure>`s, and
cancelled jobs `<skipped>`: CI then tells "the model got worse" from "the run broke".
"""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET
from collections.abc import Iterator

from evalrelay.bridge.reports.campaign import CampaignResults, TargetTally
from evalrelay.bridge.reports.outcomes import Outcome, is_cached, outcome
from evalrelay.bridge.reports.turns import turn_line
from evalrelay.bridge.results.result import Result

NOT_XML = re.compile("[^\t\n\r\x20-\ud7ff\ue000-\ufffd\U00010000-\U0010ffff]")
"""Characters XML 1.0 cannot hold, even escaped: most C0 controls (ESC of terminal colours,
NUL, BEL...), lone surrogates, U+FFFE and U+FFFF."""

CACHED = "answer served from the response cache (run --cache), not by a call of this job"
INDENT = "  "


def junit_xml(campaign: CampaignResults) -> str:
    return "".join(junit_chunks(campaign))


def junit_chunks(campaign: CampaignResults) -> Iterator[str]:
    """The document a test case at a time: the counts each `<testsuite>` opens with were
    taken when the campaign was loaded."""
    suites = {target: _counts(tally) for target, tally in sorted(campaign.tallies.items())}
    totals: dict[str, float] = {"tests": 0, "failures": 0, "errors": 0, "skipped": 0, "time": 0.0}
    for counts in suites.values():
        for key, value in counts.items():
            totals[key] += value
    root = _attributes({"name": campaign.campaign_id, **totals})
    yield '<?xml version="1.0" encoding="UTF-8"?>\n'
    if not suites:
        yield f"<testsuites{root} />\n"
        return
    yield f"<testsuites{root}>\n"
    for target, counts in suites.items():
        timestamp = campaign.tallies[target].first_started
        attributes: dict[str, str | float] = {"name": target, **counts}
        if timestamp is not None:
            attributes["timestamp"] = timestamp.strftime("%Y-%m-%dT%H:%M:%S")
        yield f"{INDENT}<testsuite{_attributes(attributes)}>\n"
        for result in campaign.results(target):
            case = _testcase(result)
            ET.indent(case, space=INDENT, level=2)
            # A raw CR in text would be read back as a newline: written as a reference, it stays.
            text = ET.tostring(case, encoding="unicode").replace("\r", "&#13;")
            yield INDENT * 2 + text + "\n"
        yield f"{INDENT}</testsuite>\n"
    yield "</testsuites>\n"


def _counts(tally: TargetTally) -> dict[str, float]:
    return {
        "tests": tally.outcomes.total(),
        "failures": tally.outcomes[Outcome.FAILED],
        "errors": tally.outcomes[Outcome.ERROR],
        "skipped": tally.outcomes[Outcome.CANCELLED],
        "time": tally.duration_ms / 1000,
    }


def _attributes(values: dict[str, str | float]) -> str:
    """` name="value"` each, escaped as ElementTree escapes them."""
    return "".join(
        f' {name}="{_escaped(value if isinstance(value, str) else _number(value))}"'
        for name, value in values.items()
    )


def _escaped(text: str) -> str:
    text = xml_text(text)
    for raw, escaped in ATTRIBUTE_ESCAPES:
        text = text.replace(raw, escaped)
    return text


ATTRIBUTE_ESCAPES = (
    ("&", "&amp;"),
    ("<", "&lt;"),
    (">", "&gt;"),
    ('"', "&quot;"),
    ("\r", "&#13;"),
    ("\n", "&#10;"),
    ("\t", "&#09;"),
)


def xml_text(text: str) -> str:
    """The text with each character XML cannot hold written as its Python escape (ESC as
    `\\x1b`), so the document parses and a reader still sees what the agent printed."""
    return NOT_XML.sub(lambda m: m.group().encode("unicode_escape").decode("ascii"), text)


def _testcase(result: Result) -> ET.Element:
    name = xml_text(result.case_id + (f" #{result.repeat}" if result.repeat else ""))
    case = ET.Element(
        "testcase",
        name=name,
        classname=xml_text(f"{result.dataset}.{result.target}"),
        time=_number(result.duration_ms / 1000),
    )
    kind = outcome(result)
    message = xml_text(result.error.message) if result.error else ""
    if kind is Outcome.ERROR:
        ET.SubElement(case, "error", message=message, type=result.status.value).text = message
    elif kind is Outcome.CANCELLED:
        ET.SubElement(case, "skipped", message="cancelled")
    elif kind is Outcome.FAILED:
        if result.score is not None:
            message = f"score {result.score:.2f} is below the pass threshold"
        failure = ET.SubElement(case, "failure", message=message, type=result.status.value)
        failure.text = xml_text(
            "\n".join(
                [
                    *(f"miss: {m}" for m in result.misses),
                    *(turn_line(t) for t in result.turns or () if not t.passed),
                    *([result.reasoning] if result.reasoning else []),
                    *([CACHED] if is_cached(result) else []),
                ]
            )
        )
    if result.turns:
        ET.SubElement(case, "system-out").text = xml_text(_transcript(result))
    elif result.answer:
        ET.SubElement(case, "system-out").text = xml_text(result.answer)
    return case


def _transcript(result: Result) -> str:
    """A conversation turn by turn: each turn's verdict, its message and its answer."""
    return "\n".join(
        f"{turn_line(t)}\nuser: {t.input}\nassistant: {t.answer or ''}" for t in result.turns or ()
    )


def _number(value: float) -> str:
    return str(value) if isinstance(value, int) else f"{value:.3f}"

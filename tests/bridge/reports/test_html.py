"""The HTML report: what each target was sent, tool calls apart from text, every filter
value from the address, expanding and collapsing the cases, and cached answers. What the
page's script does is checked in headless Chromium."""

from __future__ import annotations

import re
from html import unescape
from pathlib import Path

import pytest

from bridge.evalfile.schema import ToolCall
from bridge.prompt.build import PromptRequest
from bridge.prompt.messages import ChatMessage
from bridge.reports.campaign import CampaignResults, Outcome, outcome
from bridge.reports.html import API_NOTE, QUESTION_NOTE, html_report
from bridge.results.result import Result, Status
from tests.bridge.reports.reporting import CAMPAIGN, graded, rendered, result, write_campaign

SHOWN = re.compile(r'<span id="shown" class="muted">([^<]*)</span>')


def campaign_of(tmp_path: Path, results: list[Result]) -> CampaignResults:
    return CampaignResults.load(write_campaign(tmp_path / "results", results))


def page_of(tmp_path: Path, results: list[Result]) -> Path:
    page = tmp_path / "camp.html"
    page.write_text(html_report(campaign_of(tmp_path, results)))
    return page


def cases_of(html: str) -> dict[str, str]:
    """Each case's part of the page, unescaped, by `case target`."""
    cases = {}
    for part in html.split('<tbody class="case"')[1:]:
        cells = re.search(r"<td>([^<]*)</td><td>([^<]*)</td>", part)
        assert cells is not None
        cases[" ".join(cells.groups())] = unescape(part)
    return cases


def value_of(result: Result, field: str) -> str:
    """What the page's filter on `field` compares."""
    values = {"status": result.status.value, "outcome": outcome(result).value}
    return values.get(field, result.target)


def test_the_question_is_not_called_the_task_an_agent_received(tmp_path: Path) -> None:
    codex = {"workspace": "/w/q-a1", "files": ["AGENTS.md", "task.md"]}
    task = "# Task\n\nQuestion of q?\n\nWrite the answer to /w/messages/r1_res.md"
    results = [
        result("q", "codex", Status.INFRA_ERROR, artifacts={"codex": codex}),  # no task kept
        result("q", "copilot", Status.OK, answer="42", artifacts={"copilot": {"task": task}}),
        result("q", "vscode", Status.OK, answer="42", artifacts={"vscode": {"request": task}}),
        result("q", "gpt", Status.OK, answer="42"),
    ]
    cases = cases_of(html_report(campaign_of(tmp_path, results)))
    assert not any("the task the" in part for part in cases.values())
    agent = cases["q codex"]
    assert "<h3>Question</h3>" in agent and QUESTION_NOTE in agent
    assert (
        "The worker writes it into the codex agent's task.md; this run ended before the "
        "agent's record kept that file." in agent
    )
    assert '<div class="role">question</div><pre>Question of q?</pre>' in agent
    copilot = cases["q copilot"]
    assert "<h3>Task file</h3>" in copilot
    assert f'<div class="role">task file</div><pre>{task}</pre>' in copilot
    vscode = cases["q vscode"]
    assert "<h3>Task file</h3>" in vscode
    assert "The task file the vscode agent was given; the case's question is inside it." in vscode
    assert f'<div class="role">task file</div><pre>{task}</pre>' in vscode
    api = cases["q gpt"]
    assert "<h3>Messages</h3>" in api and API_NOTE in api
    assert '<div class="role">system</div><pre>Be brief.</pre>' in api
    assert '<div class="role">user</div><pre>Question of q?</pre>' in api


def test_tool_calls_are_labelled_blocks_apart_from_the_text(tmp_path: Path) -> None:
    call = ToolCall(id="c1", name="weather", arguments={"city": "Paris"})
    request = PromptRequest(
        question="(flattened)",
        chat_prompt=[
            ChatMessage(role="system", content="Use tools."),
            ChatMessage(role="user", content="Weather in Paris?"),
            ChatMessage(role="assistant", content="Let me look.", tool_calls=[call]),
            ChatMessage(role="tool", content="18 C", tool_call_id="c1"),
        ],
    )
    answered = graded(
        "w",
        "gpt",
        0.9,
        answer="It is 18 C.",
        raw_request=request,
        artifacts={"tool_calls": [{"id": "c2", "name": "forecast", "arguments": {"days": 2}}]},
    )
    page = cases_of(html_report(campaign_of(tmp_path, [answered])))["w gpt"]
    assert re.search(
        r'<div class="role">assistant</div><pre>Let me look\.</pre>\s*'
        r'<div class="role">tool call · weather · id c1</div>'
        r'<pre class="tool-call">\{\s*"city": "Paris"\s*\}</pre>',
        page,
    )
    assert '<div class="role">tool · output of call c1</div><pre>18 C</pre>' in page
    assert re.search(
        r'<pre class="answer">It is 18 C\.</pre>\s*'
        r'<div class="role">tool call · forecast · id c2</div>'
        r'<pre class="tool-call">\{\s*"days": 2\s*\}</pre>',
        page,
    )
    assert page.count("forecast") == 1  # not again in the artifacts' JSON


FILTERS = [
    *(("status", s.value) for s in Status),
    *(("outcome", o.value) for o in Outcome),
    ("target", "gpt"),
    ("target", "nobody"),
    ("status", "no-such-status"),
]


@pytest.mark.parametrize(("field", "value"), FILTERS)
def test_a_filter_in_the_address_shows_exactly_its_results(
    field: str, value: str, tmp_path: Path
) -> None:
    campaign = campaign_of(tmp_path, CAMPAIGN)
    page = tmp_path / "camp.html"
    page.write_text(html_report(campaign))
    want = sum(value_of(r, field) == value for r in campaign.results)

    dom = rendered(page, f"#{field}={value}", tmp_path)

    shown = re.findall(r'<tbody class="case"(?![^>]*\bhidden\b)[^>]*>', dom)
    assert len(shown) == want
    line = SHOWN.search(dom).group(1)  # type: ignore[union-attr]
    suffix = "" if want else f" · no result has {field} {value}"
    assert line == f"showing {want} of {len(CAMPAIGN)}{suffix}"


def test_filters_that_each_match_but_not_together_say_so(tmp_path: Path) -> None:
    dom = rendered(page_of(tmp_path, CAMPAIGN), "#target=claude&outcome=failed", tmp_path)
    line = SHOWN.search(dom).group(1)  # type: ignore[union-attr]
    assert line == "showing 0 of 6 · no result matches all these filters"


def test_expand_all_opens_the_shown_cases_and_collapse_all_closes_them(tmp_path: Path) -> None:
    page = page_of(tmp_path, CAMPAIGN)

    def after_clicking(*buttons: str) -> list[tuple[str, str]]:
        clicks = "".join(f'document.getElementById("{b}").click();' for b in buttons)
        clicked = tmp_path / "clicked.html"
        clicked.write_text(page.read_text().replace("</body>", f"<script>{clicks}</script></body>"))
        dom = rendered(clicked, "#target=gpt", tmp_path)
        found = re.findall(
            r'<tbody class="case" data-target="(\w+)".*?<details( open="")?>', dom, re.S
        )
        return sorted(found)

    assert after_clicking() == [("claude", "")] * 2 + [("gpt", "")] * 4
    assert after_clicking("expand-all") == [("claude", "")] * 2 + [("gpt", ' open=""')] * 4
    assert after_clicking("expand-all", "collapse-all") == after_clicking()


def test_a_cached_answer_is_marked_and_its_first_call_figures_explained(tmp_path: Path) -> None:
    first_call = {"cached": True, "latency_ms": 812, "request_id": "req-first"}
    cases = cases_of(
        html_report(
            campaign_of(
                tmp_path,
                [
                    graded("capital", "gpt", 0.3, artifacts=first_call),
                    graded("river", "gpt", 0.9, artifacts={"latency_ms": 640}),
                ],
            )
        )
    )
    cached, fresh = cases["capital gpt"], cases["river gpt"]
    assert '<td>ok <span class="badge cached" title="answered from the response cache">' in cached
    assert "Answered from the response cache (<code>run --cache</code>)" in cached
    assert "those of the earlier call that filled the cache" in cached
    assert "cached" not in fresh

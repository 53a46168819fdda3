"""The HTML report: what each target was sent, tool calls apart from text, every filter
value from the address, expanding and collapsing the cases, cached answers, and a page of
rows at a time of a big campaign. The page's script makes the cases, so every check of
them is on the page as headless Chromium shows it."""

from __future__ import annotations

import random
import re
from html import unescape
from pathlib import Path

import pytest

from bridge.evalfile.schema import ToolCall
from bridge.prompt.build import PromptRequest
from bridge.prompt.messages import ChatMessage
from bridge.reports.campaign import CampaignResults, Outcome, outcome
from bridge.reports.html import html_report
from bridge.reports.html_cases import API_NOTE, PAGE_ROWS, QUESTION_NOTE
from bridge.results.result import Result, Status
from tests.bridge.reports.reporting import CAMPAIGN, graded, rendered, result, write_campaign

SHOWN = re.compile(r'<span id="shown" class="muted">([^<]*)</span>')


def campaign_of(tmp_path: Path, results: list[Result]) -> CampaignResults:
    return CampaignResults.load(write_campaign(tmp_path / "results", results))


def page_of(tmp_path: Path, results: list[Result]) -> Path:
    page = tmp_path / "camp.html"
    page.write_text(html_report(campaign_of(tmp_path, results)))
    return page


def dom_of(tmp_path: Path, results: list[Result], fragment: str = "") -> str:
    return rendered(page_of(tmp_path, results), fragment, tmp_path)


def cases_of(dom: str) -> dict[str, str]:
    """Each case's part of the page, unescaped, by `case target`."""
    cases = {}
    table = dom[dom.index('<table id="cases">') : dom.index("</table>\n<script")]
    for part in table.split('<tbody class="case"')[1:]:
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
    cases = cases_of(dom_of(tmp_path, results))
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
    page = cases_of(dom_of(tmp_path, [answered]))["w gpt"]
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
    want = sum(value_of(r, field) == value for r in campaign.results())

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

    assert after_clicking() == [("gpt", "")] * 4  # claude's cases are not in the document
    assert after_clicking("expand-all") == [("gpt", ' open=""')] * 4
    assert after_clicking("expand-all", "collapse-all") == after_clicking()


def test_a_cached_answer_is_marked_and_its_first_call_figures_explained(tmp_path: Path) -> None:
    first_call = {"cached": True, "latency_ms": 812, "request_id": "req-first"}
    cases = cases_of(
        dom_of(
            tmp_path,
            [
                graded("capital", "gpt", 0.3, artifacts=first_call),
                graded("river", "gpt", 0.9, artifacts={"latency_ms": 640}),
            ],
        )
    )
    cached, fresh = cases["capital gpt"], cases["river gpt"]
    assert '<td>ok <span class="badge cached" title="answered from the response cache">' in cached
    assert "Answered from the response cache (<code>run --cache</code>)" in cached
    assert "those of the earlier call that filled the cache" in cached
    assert "cached" not in fresh


TARGETS = ("claude", "gpt", "mistral")
SYSTEM = "Answer as a careful geographer, in one sentence. " * 30
NEEDLE = ("case-0906", "gpt")


def many_results(count: int = 3000) -> list[Result]:
    """`count` results over three targets, written in no order; every seventh case failed,
    and one answer (NEEDLE's) is the only one that says 'needle'."""
    results = []
    for i in range(count):
        case_id, target = f"case-{i // 3:04d}", TARGETS[i % 3]
        answer = "a needle in the haystack" if (case_id, target) == NEEDLE else f"Paris {i}"
        request = PromptRequest(question=f"Question of {case_id}?", system_prompt=SYSTEM)
        score = 0.3 if (i // 3) % 7 == 0 else 0.9
        results.append(graded(case_id, target, score, answer=answer, raw_request=request))
    random.Random(17).shuffle(results)
    return results


ROW = re.compile(r'<tbody class="case" data-target="(\w+)"[^>]*><tr class="row"><td>([^<]*)</td>')
PAGES = re.compile(r'<span id="pages" class="muted">([^<]*)</span>')


def shown_rows(dom: str) -> list[tuple[str, str]]:
    """(case, target) of each case in the document, in order."""
    return [(case, target) for target, case in ROW.findall(dom)]


def with_script(page: Path, script: str) -> Path:
    """The page with `script` run after its own: what a user's clicks and typing do."""
    acted = page.with_name("acted.html")
    acted.write_text(page.read_text().replace("</body>", f"<script>{script}</script></body>"))
    return acted


def test_a_big_campaign_puts_one_page_of_cases_in_the_document_and_shared_text_once(
    tmp_path: Path,
) -> None:
    page = page_of(tmp_path, many_results())
    dom = rendered(page, "", tmp_path)
    rows = shown_rows(dom)
    assert len(rows) == dom.count('<tbody class="case"') == PAGE_ROWS
    assert rows[:2] == [("case-0000", "claude"), ("case-0001", "claude")]  # by target, case
    assert SHOWN.search(dom).group(1) == "showing 3000 of 3000"  # type: ignore[union-attr]
    assert PAGES.search(dom).group(1) == "of 30 · cases 1 to 100"  # type: ignore[union-attr]
    html = page.read_text()
    assert html.count(SYSTEM) == 1  # sent to all 3,000 results, in the page once
    assert html.count("Question of case-0042?") == 1  # asked of three targets


def test_a_case_on_a_later_page_is_reached_by_paging_by_typing_or_by_filters(
    tmp_path: Path,
) -> None:
    results = many_results()
    page = page_of(tmp_path, results)
    by_target = sorted((r.target, r.case_id) for r in results)

    last = rendered(page, "#page=30", tmp_path)
    assert shown_rows(last)[-1] == ("case-0999", "mistral")
    assert PAGES.search(last).group(1) == "of 30 · cases 2901 to 3000"  # type: ignore[union-attr]

    clicked = 'document.getElementById("next").click();' * 2
    third = shown_rows(rendered(with_script(page, clicked), "", tmp_path))
    assert third == [(case, target) for target, case in by_target[200:300]]

    typed = (
        'const n = document.getElementById("page-number"); n.value = "12";'
        'n.dispatchEvent(new Event("change"));'
    )
    twelfth = shown_rows(rendered(with_script(page, typed), "", tmp_path))
    assert twelfth == [(case, target) for target, case in by_target[1100:1200]]

    searched = (
        'const t = document.getElementById("f-text"); t.value = "NEEDLE";'
        't.dispatchEvent(new Event("input"));'
    )
    found = rendered(with_script(page, searched), "", tmp_path)
    assert shown_rows(found) == [NEEDLE]
    assert '<pre class="answer">a needle in the haystack</pre>' in found

    failures = sorted(r.case_id for r in results if r.target == "gpt" and not r.passed)
    second = rendered(page, "#target=gpt&outcome=failed&page=2", tmp_path)
    assert len(failures) == 143
    assert shown_rows(second) == [(case, "gpt") for case in failures[100:]]
    assert SHOWN.search(second).group(1) == "showing 143 of 3000"  # type: ignore[union-attr]

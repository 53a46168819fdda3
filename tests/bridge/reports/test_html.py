"""The HTML report: what each target was sent, tool calls apart from text, every filter
value from the address, expanding and collapsing the cases, cached answers, a page of rows
at a time of a big campaign, the details of a row read only when it is opened (from the
page, or from the parts folder beside a big one), and the start of each answer on its
chip, kept to one line and to text however hostile. The page's script makes the cases,
so every check of them is on the page as headless Chromium shows it."""

from __future__ import annotations

import json
import re
from bisect import bisect_right
from html import unescape
from pathlib import Path
from typing import Any
from urllib.parse import quote

import pytest

from evalrelay.bridge.evalfile.schema import ToolCall
from evalrelay.bridge.prompt.messages import ChatMessage
from evalrelay.bridge.prompt.request import PromptRequest
from evalrelay.bridge.reports.campaign import CampaignResults
from evalrelay.bridge.reports.html import html_report
from evalrelay.bridge.reports.html_cases import API_NOTE, PAGE_ROWS, QUESTION_NOTE
from evalrelay.bridge.reports.outcomes import Outcome, outcome
from evalrelay.bridge.reports.writer import write_report
from evalrelay.bridge.results.result import Result, Status, TurnResult
from tests.bridge.reports.reporting import (
    CAMPAIGN,
    NEEDLE,
    OPEN_ALL,
    SYSTEM,
    agent_run,
    graded,
    long_answers,
    many_results,
    rendered,
    result,
    with_script,
    write_campaign,
)
from tests.browser import dom as dom_in_window

SHOWN = re.compile(r'<span id="shown" class="muted">([^<]*)</span>')


def campaign_of(tmp_path: Path, results: list[Result]) -> CampaignResults:
    return CampaignResults.load(write_campaign(tmp_path / "results", results))


def page_of(tmp_path: Path, results: list[Result]) -> Path:
    page = tmp_path / "camp.html"
    page.write_text(html_report(campaign_of(tmp_path, results)))
    return page


def dom_of(tmp_path: Path, results: list[Result], fragment: str = "") -> str:
    """The page with every shown row opened."""
    return rendered(with_script(page_of(tmp_path, results), OPEN_ALL), fragment, tmp_path)


def cases_of(dom: str) -> dict[str, str]:
    """Each case's part of the page, unescaped, by `case target`."""
    cases = {}
    start = dom.index('<table id="cases">')
    table = dom[start : dom.index("</table>\n</div>", start)]
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


def test_a_conversation_shows_each_turn_and_its_own_verdict(tmp_path: Path) -> None:
    turns = [
        TurnResult(turn=1, input="First?", status="ok", answer="One.", score=1.0, passed=True),
        TurnResult(
            turn=2,
            input="Second?",
            status="ok",
            answer="Uno.",
            score=0.0,
            passed=False,
            misses=["answer does not contain 'Two'"],
        ),
        TurnResult(
            turn=3, input="Third?", status="skipped", score=0.0, passed=False, error="stopped"
        ),
    ]
    talk = graded("talk", "gpt", 0.33, answer="Uno.", turns=turns)
    page = cases_of(dom_of(tmp_path, [talk]))["talk gpt"]
    assert re.search(
        r'<div class="role">user</div><pre>First\?</pre>\s*'
        r'<div class="role">assistant</div><pre>One\.</pre>\s*'
        r'<div class="role">user</div><pre>Second\?</pre>\s*'
        r'<div class="role">assistant</div><pre>Uno\.</pre>\s*'
        r'<div class="role">user</div><pre>Third\?</pre>',
        page,
    ), page
    for text in ("turn 1", "turn 2", "turn, skipped", "answer does not contain 'Two'", "stopped"):
        assert text in page, text


def test_an_agents_trajectory_is_a_timeline_and_its_workspace_changes_a_diff(
    tmp_path: Path,
) -> None:
    page = cases_of(dom_of(tmp_path, [agent_run("fix")]))["fix codex"]
    assert "<h3>Trajectory (codex)</h3>" in page
    assert "3 steps · 4 model calls · $0.25" in page
    steps = re.findall(r'<li class="step (\w+)"><div class="role">([^<]*)</div>', page)
    assert steps == [
        ("read", "read · Read · 12 ms · a.py"),
        ("command", "command · Bash"),
        ("edit", "edit · Write · failed · b.txt"),
    ]
    assert re.search(
        r'"file_path": "a\.py"\s*\}</pre><pre class="tool-call">print\(\'hi\'\)</pre>', page
    )
    assert "<h3>Workspace changes</h3><ul><li>added · b.txt</li></ul>" in page
    assert '<pre class="diff">--- /dev/null\n+++ b/b.txt\n@@ -0,0 +1 @@\n+done\n</pre>' in page
    assert "tool call ·" not in page  # the steps are not shown twice


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

    dom = rendered(page, f"#view=list&{field}={value}", tmp_path)

    shown = re.findall(r'<tbody class="case"(?![^>]*\bhidden\b)[^>]*>', dom)
    assert len(shown) == want
    line = SHOWN.search(dom).group(1)  # type: ignore[union-attr]
    suffix = "" if want else f" · no result has {field} {value}"
    assert line == f"showing {want} of {len(CAMPAIGN)}{suffix}"


def test_filters_that_each_match_but_not_together_say_so(tmp_path: Path) -> None:
    dom = rendered(page_of(tmp_path, CAMPAIGN), "#view=list&target=claude&outcome=failed", tmp_path)
    line = SHOWN.search(dom).group(1)  # type: ignore[union-attr]
    assert line == "showing 0 of 6 · no result matches all these filters"


def test_expand_all_opens_the_shown_cases_and_collapse_all_closes_them(tmp_path: Path) -> None:
    page = page_of(tmp_path, CAMPAIGN)

    def after_clicking(*buttons: str) -> list[tuple[str, str]]:
        clicks = "".join(f'document.getElementById("{b}").click();' for b in buttons)
        dom = rendered(with_script(page, clicks), "#view=list&target=gpt", tmp_path)
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


ROW = re.compile(r'<tbody class="case" data-target="(\w+)"[^>]*><tr class="row"><td>([^<]*)</td>')
PAGES = re.compile(r'<span id="pages" class="muted">([^<]*)</span>')


def shown_rows(dom: str) -> list[tuple[str, str]]:
    """(case, target) of each case in the document, in order."""
    return [(case, target) for target, case in ROW.findall(dom)]


def test_a_big_campaign_puts_one_page_of_cases_in_the_document_and_shared_text_once(
    tmp_path: Path,
) -> None:
    page = page_of(tmp_path, many_results())
    dom = rendered(page, "#view=list", tmp_path)
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

    last = rendered(page, "#view=list&page=30", tmp_path)
    assert shown_rows(last)[-1] == ("case-0999", "mistral")
    assert PAGES.search(last).group(1) == "of 30 · cases 2901 to 3000"  # type: ignore[union-attr]

    clicked = 'document.getElementById("next").click();' * 2
    third = shown_rows(rendered(with_script(page, clicked), "#view=list", tmp_path))
    assert third == [(case, target) for target, case in by_target[200:300]]

    typed = (
        'const n = document.getElementById("page-number"); n.value = "12";'
        'n.dispatchEvent(new Event("change"));'
    )
    twelfth = shown_rows(rendered(with_script(page, typed), "#view=list", tmp_path))
    assert twelfth == [(case, target) for target, case in by_target[1100:1200]]

    searched = (
        'const t = document.getElementById("f-text"); t.value = "NEEDLE";'
        't.dispatchEvent(new Event("input"));'
        'setTimeout(() => document.getElementById("expand-all").click(), 200);'
    )
    found = rendered(with_script(page, searched), "#view=list", tmp_path)
    assert shown_rows(found) == [NEEDLE]
    assert '<pre class="answer">a needle in the haystack</pre>' in found

    failures = sorted(r.case_id for r in results if r.target == "gpt" and not r.passed)
    second = rendered(page, "#view=list&target=gpt&outcome=failed&page=2", tmp_path)
    assert len(failures) == 143
    assert shown_rows(second) == [(case, "gpt") for case in failures[100:]]
    assert SHOWN.search(second).group(1) == "showing 143 of 3000"  # type: ignore[union-attr]


def layout_of(page: Path) -> dict[str, Any]:
    """Where the page looks for its parts: `{token, folder, starts}`."""
    found = re.search(
        r'<script type="application/json" id="report-parts">([^<]*)<', page.read_text()
    )
    assert found is not None
    layout: dict[str, Any] = json.loads(found.group(1))
    return layout


def watched(opened: int | None) -> str:
    """Opens the row at `opened` on the page shown, and writes the part files the page
    loaded into `<body data-loaded>`."""
    return (
        "const loaded = [];"
        "new MutationObserver(changes => { for (const c of changes) for (const n of c.addedNodes)"
        '  if (n.src) loaded.push(n.getAttribute("src")); })'
        ".observe(document.head, {childList: true});"
        + (
            ""
            if opened is None
            else f'document.querySelectorAll("tbody.case details")[{opened}].open = true;'
        )
        + 'setTimeout(() => document.body.setAttribute("data-loaded", loaded.join(" ")), 500);'
    )


@pytest.fixture(scope="module")
def big_report(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, list[Result]]:
    """A page and its parts folder, as `report` writes them for 3,000 results of 3 KB."""
    folder = tmp_path_factory.mktemp("big")
    results = long_answers(many_results())
    page = write_report(campaign_of(folder, results), "html", folder / "camp.html")
    return page, results


def test_a_big_report_reads_a_rows_details_from_its_parts_folder_when_it_is_opened(
    big_report: tuple[Path, list[Result]], tmp_path: Path
) -> None:
    page, results = big_report
    layout = layout_of(page)
    files = sorted(p.name for p in page.with_name("camp.html.parts").iterdir())
    assert layout["folder"] == "camp.html.parts"
    assert files == [f"{n:04d}.js" for n in range(len(layout["starts"]))]
    assert len(files) > 30
    by_target = sorted((r.target, r.case_id) for r in results)
    target, case = by_target[1104]  # the fifth row of page 12
    assert f"(end of {case} {target})" not in page.read_text()

    def part(row: int) -> str:
        return f"camp.html.parts/{bisect_right(layout['starts'], row) - 1:04d}.js"

    closed = rendered(with_script(page, watched(None)), "#view=list&page=12", tmp_path)
    assert 'data-loaded=""' in closed  # nothing read until a row is opened

    dom = rendered(with_script(page, watched(4)), "#view=list&page=12", tmp_path)
    shown = cases_of(dom)[f"{case} {target}"]
    assert f"(end of {case} {target})</pre>" in shown
    assert '<div class="role">user</div><pre>Question of case-0104?</pre>' in shown
    loaded = re.search(r'data-loaded="([^"]*)"', dom).group(1).split()  # type: ignore[union-attr]
    # Its own part, and those that first carried the texts it shares: the system prompt
    # (row 0) and its question (asked of claude first, row 104).
    assert sorted(loaded) == sorted({part(1104), part(104), part(0)})


def test_expanding_a_page_of_rows_from_many_parts_shows_each_ones_answer(
    big_report: tuple[Path, list[Result]], tmp_path: Path
) -> None:
    page, _ = big_report
    # Failures of gpt and mistral: a page of them comes from some twenty parts, more than
    # the page keeps read at once (KEPT_PARTS), all read together.
    dom = rendered(with_script(page, OPEN_ALL), "#view=list&outcome=failed&page=3", tmp_path)
    cases = cases_of(dom)
    assert len(cases) == PAGE_ROWS
    for shown, part in cases.items():
        case, target = shown.split()
        assert f"(end of {case} {target})</pre>" in part, shown


def test_a_big_reports_page_without_its_folder_says_where_the_details_are(
    big_report: tuple[Path, list[Result]], tmp_path: Path
) -> None:
    alone = tmp_path / "camp.html"
    alone.write_bytes(big_report[0].read_bytes())
    dom = rendered(with_script(alone, watched(0)), "#view=list", tmp_path)
    assert (
        '<p class="error">This row\'s details are in camp.html.parts/0000.js, which could not '
        "be read: the folder camp.html.parts must be beside this page.</p>"
    ) in dom
    assert "showing 3000 of 3000" in dom  # the rest of the page works


def test_a_small_report_is_one_file_that_shows_every_detail_alone(tmp_path: Path) -> None:
    page = write_report(campaign_of(tmp_path, CAMPAIGN), "html", tmp_path / "camp.html")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["camp.html", "results"]
    assert layout_of(page)["folder"] is None
    mailed = tmp_path / "mailed" / "camp.html"
    mailed.parent.mkdir()
    mailed.write_bytes(page.read_bytes())
    cases = cases_of(rendered(with_script(mailed, OPEN_ALL), "#view=list", tmp_path))
    assert len(cases) == len(CAMPAIGN)
    assert '<pre class="answer">Answer to capital</pre>' in cases["capital gpt"]
    assert '<div class="role">system</div><pre>Be brief.</pre>' in cases["river claude"]


def test_a_rewritten_report_replaces_its_parts_folder_whole(tmp_path: Path) -> None:
    page, folder = tmp_path / "camp.html", tmp_path / "camp.html.parts"
    results = long_answers(many_results())
    write_report(campaign_of(tmp_path, results), "html", page)
    first = sorted(p.name for p in folder.iterdir())

    write_report(campaign_of(tmp_path, results[:2000]), "html", page)
    layout = layout_of(page)
    files = sorted(folder.iterdir())
    assert len(first) > len(files) == len(layout["starts"])
    assert all(f.read_text().startswith(f'evalrelayPart("{layout["token"]}",') for f in files)

    write_report(campaign_of(tmp_path, CAMPAIGN), "html", page)
    assert layout_of(page)["folder"] is None
    assert sorted(p.name for p in tmp_path.iterdir()) == ["camp.html", "results"]  # nothing hidden


def test_a_report_that_fails_midway_leaves_the_old_one_whole(tmp_path: Path) -> None:
    page, folder = tmp_path / "camp.html", tmp_path / "camp.html.parts"
    results = long_answers(many_results())
    campaign = campaign_of(tmp_path, results)
    write_report(campaign, "html", page)
    before = {p.name: p.read_bytes() for p in [page, *folder.iterdir()]}
    # The last result in the report's order, spoilt in place after the campaign was read.
    data = campaign.path.read_bytes()
    line = next(
        line
        for line in data.splitlines(keepends=True)
        if b'"case_id":"case-0999","dataset":"geo","target":"mistral"' in line
    )
    with campaign.path.open("r+b") as handle:
        handle.seek(data.index(line))
        handle.write(b"x" * (len(line) - 1))

    with pytest.raises(ValueError, match="not a result line"):
        write_report(campaign, "html", page)
    assert {p.name: p.read_bytes() for p in [page, *folder.iterdir()]} == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["camp.html", "camp.html.parts", "results"]


CHIP = re.compile(
    r'<tr data-case="([^"]*)">.*?<button type="button" class="chip o-\w+"[^>]*>'
    r'<span class="score">[^<]*</span>(?:<bdi class="(said[^"]*)">([^<]*)</bdi>)?</button>'
)


def chip_texts(dom: str) -> dict[str, tuple[str, str] | None]:
    """The answer's start on each case's (one) chip: (class, text), or None for none."""
    return {
        unescape(case): (kind, unescape(said)) if kind else None
        for case, kind, said in CHIP.findall(dom)
    }


def test_a_chip_shows_the_first_forty_characters_of_its_answer_on_one_line(
    tmp_path: Path,
) -> None:
    answers = {
        "short": "Paris",
        "forty": "x" * 40,
        "forty-one": "y" * 41,
        "lines": "line one\n\n\tline two\r\n",
        "controls": "a\x00b\x1bc\x7fd\u0085e",
        "spaced": "a" + " " * 58 + "b and the rest",  # the index's 60: it may go on
        "emoji": "\U0001f642" * 45,  # characters, not halves of them
        "blank": "   \n ",
        "rtl": "\u202eevil",
    }
    results = [graded(case, "gpt", 0.9, answer=answer) for case, answer in answers.items()]
    results += [
        result("desert", "gpt", Status.MODEL_FAILURE, answer="", error="empty answer"),
        result("mountain", "gpt", Status.INFRA_ERROR, error="connection refused"),
    ]
    chips = chip_texts(rendered(page_of(tmp_path, results), "", tmp_path))
    assert chips == {
        "short": ("said", "Paris"),
        "forty": ("said", "x" * 40),
        "forty-one": ("said", "y" * 40 + "\u2026"),
        "lines": ("said", "line one line two"),
        "controls": ("said", "a b c d e"),
        "spaced": ("said", "a b\u2026"),
        "emoji": ("said", "\U0001f642" * 40 + "\u2026"),
        "blank": ("said empty", "blank answer"),
        "rtl": ("said", "\u202eevil"),  # in a <bdi>: it turns itself, not the chip
        "desert": ("said empty", "empty answer"),
        "mountain": None,  # no answer: the chip says what went wrong
    }


HOSTILE_CASE = '"><svg onload="document.body.dataset.owned=1">'
HOSTILE_TARGET = '<i onmouseover="document.body.dataset.owned=2">claude'
HOSTILE_ANSWERS = {
    "gpt": '<img src=x onerror="document.body.dataset.owned=3"> is my answer',
    HOSTILE_TARGET: "</script><script>document.body.dataset.owned=4</script>",
}
MARKED = """
setTimeout(() => {
  const marked = document.querySelectorAll("[onload], [onerror], [onmouseover]").length;
  document.body.setAttribute("data-elements", marked + " " + document.images.length);
}, 300);
"""


def test_hostile_answers_case_ids_and_targets_stay_text_on_chips_and_side_by_side(
    tmp_path: Path,
) -> None:
    results = [
        graded(HOSTILE_CASE, target, 0.9, answer=answer, job_id=f"hostile-{n}")
        for n, (target, answer) in enumerate(HOSTILE_ANSWERS.items())
    ]
    page = with_script(page_of(tmp_path, results), MARKED)
    key = json.dumps(["geo", HOSTILE_CASE, "gpt", 0, HOSTILE_TARGET, 0])
    dom = rendered(page, "#pair=" + quote(key, safe=""), tmp_path)

    assert "data-owned" not in dom  # no handler and no script of theirs ran
    assert 'data-elements="0 0"' in dom  # none of their elements was made
    chips = re.findall(r'<bdi class="said">([^<]*)</bdi>', dom)
    assert sorted(unescape(c) for c in chips) == sorted(
        a[:40] + "\u2026" for a in HOSTILE_ANSWERS.values()
    )
    panel = dom[dom.index('<aside id="pair"') : dom.index("</aside>", dom.index('"pair"'))]
    assert "hidden" not in panel[: panel.index(">")]
    title = re.search(r'<h2 id="pair-title" tabindex="-1">([^<]*)</h2>', panel)
    assert (
        title is not None and unescape(title.group(1)) == f"{HOSTILE_CASE} · answers side by side"
    )
    shown = re.findall(r'<strong>([^<]*)</strong>.*?<pre class="answer">([^<]*)</pre>', panel)
    assert [(unescape(t), unescape(a)) for t, a in shown] == list(HOSTILE_ANSWERS.items())


ONE_LINE = """
setTimeout(() => {
  const chips = [...document.querySelectorAll("#matrix .chip")];
  const heights = new Set(chips.map(c => Math.round(c.getBoundingClientRect().height)));
  const longest = Math.max(...chips.map(c => c.querySelector(".said").textContent.length));
  const wide = document.documentElement.scrollWidth > document.documentElement.clientWidth;
  const figures = [chips.length, [...heights].join("/"), longest, wide];
  document.body.setAttribute("data-chips", figures.join(" "));
}, 300);
"""


def test_chips_stay_one_line_and_the_matrix_as_wide_as_the_window_at_a_thousand_cases(
    big_report: tuple[Path, list[Result]], tmp_path: Path
) -> None:
    """1,000 cases of three targets, each answer some 3 KB: a page of 100 cases shows 300
    chips of one height, none with more than 40 characters and an ellipsis, in a window
    of 1,280 pixels without scrolling sideways."""
    page, _ = big_report
    acted = with_script(page, ONE_LINE)
    dom = dom_in_window(acted.as_uri(), tmp_path / "chromium-profile", size=(1280, 900))
    found = re.search(r'data-chips="(\d+) (\d+) (\d+) (\w+)"', dom)
    assert found is not None, "the page made no chips"
    chips, height, longest, wide = found.groups()
    assert (int(chips), longest, wide) == (300, "41", "false")
    assert 15 <= int(height) <= 24  # one line of 12-pixel text


def test_the_cost_cell_says_unpriced_when_no_answer_has_a_price(tmp_path: Path) -> None:
    """Answers with tokens but no price (a mock, a house model): `unpriced`, never `-+`."""
    usage = {"usage": {"input_tokens": 10, "output_tokens": 2}}
    page = html_report(campaign_of(tmp_path, [graded("c1", "mock", 1.0, **usage)]))
    cell = re.search(r'<td class="num cost"[^>]*>([^<]*)</td>', page)
    assert cell is not None and cell.group(1) == "unpriced"
    assert "-+" not in page

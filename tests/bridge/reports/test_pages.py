"""The report's charts and matrix and the comparison page, of campaigns run for real
(`evalrelay run` on the embedded Redis, its own worker), as headless Chromium shows them:
each test takes a screenshot, checks its pixels, and checks the page's content against
the results file. The matrix's chips show the start of each answer, and a case's answers
of two targets open side by side, from the mouse or the keyboard.

With `EVALRELAY_SCREENSHOT_DIR=docs/images` the screenshots are kept for the README."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from collections import Counter
from html import unescape
from pathlib import Path
from urllib.parse import quote, unquote

import pytest

from tests.bridge.reports.pictures import (
    FAILED_RED,
    INTERVAL_BLUE,
    PASSED_GREEN,
    colours,
    picture,
)
from tests.bridge.reports.reporting import with_script
from tests.browser import dom
from tests.conftest import embedded_env, read_jsonl

CAPITALS = [
    ("France", "Paris"), ("Italy", "Rome"), ("Spain", "Madrid"), ("Peru", "Lima"),
    ("Kenya", "Nairobi"), ("Japan", "Tokyo"), ("Chile", "Santiago"), ("Egypt", "Cairo"),
    ("Norway", "Oslo"), ("Canada", "Ottawa"), ("Ghana", "Accra"), ("Laos", "Vientiane"),
]  # fmt: skip


def targets_yaml(wrong_for_atlas: int) -> str:
    """Three mock targets: one right but for its first `wrong_for_atlas` cases, one that
    names only the city, one that echoes the question and times out a third of the time."""
    atlas = {
        f"capital-{country.lower()}": (
            "I do not know." if n < wrong_for_atlas else f"The capital of {country} is {city}."
        )
        for n, (country, city) in enumerate(CAPITALS)
    }
    guesser = {
        f"capital-{country.lower()}": city if n % 3 else f"{city}, the capital of {country}."
        for n, (country, city) in enumerate(CAPITALS)
    }
    return json.dumps(
        {
            "targets": [
                {"name": "atlas", "provider": "mock", "responses": atlas, "latency_ms": 5},
                {"name": "guesser", "provider": "mock", "responses": guesser, "latency_ms": 20},
                {
                    "name": "flaky",
                    "provider": "mock",
                    "echo": True,
                    "latency_ms": 60,
                    "failure_rate": 0.35,
                    "failure_kind": "timeout",
                },
            ]
        }
    )


def eval_file(target: str) -> str:
    """The same cases for each target, in one dataset: a row of the matrix per case."""
    cases = [
        {
            "id": f"capital-{country.lower()}",
            "input_messages": [
                {"role": "system", "content": "Answer in one sentence."},
                {"role": "user", "content": f"What is the capital of {country}?"},
            ],
            "evaluators": [
                {"name": "city", "type": "contains", "value": city},
                {"name": "country", "type": "contains", "value": country},
                {"name": "capital", "type": "icontains", "value": "capital"},
            ],
            **({"repeats": 2} if n < 2 else {}),
        }
        for n, (country, city) in enumerate(CAPITALS)
    ]
    return json.dumps({"dataset": "capitals", "target": target, "evalcases": cases})


def run_campaign(root: Path, name: str, wrong_for_atlas: int, home: Path) -> Path:
    (root / "targets.yaml").write_text(targets_yaml(wrong_for_atlas))
    for target in ("atlas", "guesser", "flaky"):
        (root / "evals" / f"{target}.yaml").write_text(eval_file(target))
    done = subprocess.run(
        [sys.executable, "-m", "evalrelay", "run", "evals", "--name", name],
        cwd=root,
        env=embedded_env(home),
        capture_output=True,
        text=True,
        timeout=180,
    )
    # 1: some cases failed; 2: some jobs ended without an answer (the timeouts)
    assert done.returncode in (0, 1, 2), done.stdout + done.stderr
    (results,) = [p for p in (root / "results").glob("*.jsonl") if name in p.name]
    return results


@pytest.fixture(scope="module")
def campaigns(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """Two runs of the same cases: in the second, atlas gets its first three wrong."""
    root = tmp_path_factory.mktemp("project")
    (root / "evalrelay.yaml").write_text("{}\n")
    (root / "evals").mkdir()
    home = tmp_path_factory.mktemp("home")
    return (
        run_campaign(root, "before", 0, home),
        run_campaign(root, "after", 3, home),
    )


def outcome_of(line: dict[str, object]) -> str:
    if line["status"] not in ("ok", "model_failure"):
        return "error"
    return "passed" if line["passed"] else "failed"


def said(answer: object) -> str | None:
    """What a chip shows of an answer: its first 40 characters as one line, and an
    ellipsis when it goes on (the page's index holds 60: an answer that long may)."""
    if answer is None:
        return None
    assert isinstance(answer, str)
    flat = " ".join(answer.split())
    more = len(flat) > 40 or len(answer) >= 60
    if not flat and not more:
        return "blank answer" if answer else "empty answer"
    return flat[:40].rstrip() + ("\u2026" if more else "")


def label_of(line: dict[str, object]) -> str:
    """A chip's first word: the score, else what went wrong."""
    score, status = line["score"], str(line["status"])
    if score is not None:
        return f"{score:.2f}"
    outcome = outcome_of(line)
    return status.replace("_", " ") if outcome == "error" else outcome


def why_of(line: dict[str, object]) -> str:
    error = line["error"]
    if isinstance(error, dict):
        return str(error["message"])
    return "; ".join(line["misses"])  # type: ignore[arg-type]


def one_result(
    lines: list[dict[str, object]], case: str, target: str, repeat: int = 0
) -> dict[str, object]:
    return next(
        line
        for line in lines
        if (line["case_id"], line["target"], line["repeat"]) == (case, target, repeat)
    )


def test_the_report_header_charts_the_campaign(
    campaigns: tuple[Path, Path], tmp_path: Path
) -> None:
    results, _ = campaigns
    page = results.with_suffix(".html")  # written by `run`
    lines = read_jsonl(results)
    shown = dom(page.as_uri(), tmp_path / "profile")

    for target in ("atlas", "guesser", "flaky"):
        mine = [line for line in lines if line["target"] == target]
        outcomes = Counter(outcome_of(line) for line in mine)
        for outcome, count in outcomes.items():
            share = f"{count / len(mine):.0%}"
            assert f"<title>{target}: {count} {outcome} of {len(mine)} ({share})</title>" in shown
        graded = [
            line for line in mine if line["score"] is not None and outcome_of(line) != "error"
        ]
        rate = sum(bool(line["passed"]) for line in graded) / len(graded)
        assert f"<title>{target}: pass rate {rate:.0%}</title>" in shown
    statuses = Counter(str(line["status"]) for line in lines)
    for status, count in statuses.items():
        assert re.search(rf"<title>{count} {status} of {len(lines)} \(\d+%\)</title>", shown)
    # Three evaluators a case: scores in thirds, in the bins 0.0, 0.3, 0.6 and 1.0.
    thirds = Counter(
        int(float(line["score"]) * 10)  # type: ignore[arg-type]
        for line in lines
        if line["score"] is not None and line["status"] in ("ok", "model_failure")
    )
    heights = re.findall(
        r'<text x="[\d.]+" y="[\d.]+" text-anchor="middle" class="count">([\d,]+)</text>', shown
    )
    assert sum(int(h.replace(",", "")) for h in heights) == thirds.total() + len(
        lines
    )  # scores + times
    assert re.search(r"p50 [\d.]+ m?s  ·  p90 [\d.]+ m?s  ·  p99 [\d.]+ m?s", shown)

    colours = picture(page.as_uri(), "report", tmp_path, (1280, 1000))
    assert colours[PASSED_GREEN] > 2000 and colours[FAILED_RED] > 500  # bars drawn, not blank


def test_the_report_draws_intervals_and_the_targets_side_by_side(
    campaigns: tuple[Path, Path], tmp_path: Path
) -> None:
    """Error bars at each target's intervals and a row per pair of targets, as
    `summary.json` has them (checked against scipy and statsmodels in
    test_compare_statistics.py)."""
    results, _ = campaigns
    page = results.with_suffix(".html")
    summary = results.with_name(results.name.removesuffix(".jsonl") + ".summary.json")
    stats = json.loads(summary.read_text())["statistics"]
    shown = dom(page.as_uri(), tmp_path / "profile")

    for target, numbers in stats["targets"].items():
        for word, key in (("pass rate", "pass_rate_ci"), ("mean score", "mean_score_ci")):
            low, high = numbers[key]
            title = f"<title>{target}: {word}: 95% interval {low:.2f} to {high:.2f}</title>"
            assert shown.count(title) == 3, title  # a whisker and two caps
        low, high = numbers["pass_rate_ci"]
        assert f">pass rate {numbers['pass_rate']:.0%} [{low:.0%}\u2013{high:.0%}]<" in shown
    table = shown[
        shown.index('<table id="pairs">') : shown.index(
            "</table>", shown.index('<table id="pairs">')
        )
    ]
    rows = re.findall(r'<tr data-pair="(\w+) (\w+)">(.*?)</tr>', table, re.DOTALL)
    assert [(a, b) for a, b, _ in rows] == [
        ("atlas", "flaky"),
        ("atlas", "guesser"),
        ("flaky", "guesser"),
    ]
    for (_, _, cells), pair in zip(rows, stats["pairs"], strict=True):
        texts = re.findall(r"<td[^>]*>([^<]*)</td>", cells)
        assert texts[:3] == [pair["a"], pair["b"], str(pair["n_paired"])]
        difference = f"{pair['difference']:+.3f}"
        if pair["difference_ci"] is None:  # every case moved alike: the sign test, no interval
            assert texts[3].strip() == difference, texts[3]
        else:
            assert texts[3].startswith(f"{difference} ["), texts[3]
        assert texts[6] == pair["verdict"]

    colours = picture(page.as_uri(), "report", tmp_path, (1280, 1000))
    assert colours[INTERVAL_BLUE] > 100  # the error bars, drawn


def test_the_matrix_has_a_row_per_case_and_a_chip_per_result(
    campaigns: tuple[Path, Path], tmp_path: Path
) -> None:
    results, _ = campaigns
    page = results.with_suffix(".html")
    lines = read_jsonl(results)
    shown = dom(page.as_uri(), tmp_path / "profile")
    matrix = shown[
        shown.index('<table id="matrix">') : shown.index(
            "</table>", shown.index('<table id="matrix">')
        )
    ]

    assert re.findall(r'<th data-target="(\w+)">', matrix) == ["atlas", "flaky", "guesser"]
    rows = re.findall(r'<tr data-case="([\w-]+)">(.*?)</tr>', matrix)
    assert [case for case, _ in rows] == sorted(f"capital-{c.lower()}" for c, _ in CAPITALS)
    for case, row in rows:
        # Every case has results of three targets: its answers can be set side by side.
        assert re.match(
            rf'<td class="case" title="{case}"><button type="button" class="pair-open" '
            rf'data-case="\d+" aria-label="answers to {case} side by side"',
            row,
        ), row
        cells = dict(re.findall(r'<td class="cell" data-target="(\w+)">(.*?)</td>', row))
        for target, cell in cells.items():
            mine = sorted(
                (line for line in lines if line["case_id"] == case and line["target"] == target),
                key=lambda line: int(line["repeat"]),  # type: ignore[call-overload]
            )
            chips = re.findall(
                r'class="chip o-(\w+)"[^>]*><span class="score">([^<]*)</span>'
                r'(?:<bdi class="said[^"]*">([^<]*)</bdi>)?</button>',
                cell,
            )
            assert [outcome for outcome, _, _ in chips] == [outcome_of(line) for line in mine]
            for (_, label, start), line in zip(chips, mine, strict=True):
                assert label == label_of(line)
                assert (unescape(start) or None) == said(line["answer"]), line
    assert (
        len(re.findall(r'<tr data-case="capital-france">.*?</tr>', matrix)[0].split('class="chip'))
        == 7
    )  # 2 repeats x 3

    # A link to one chip opens its transcript, answer and verdicts beside the matrix.
    chosen = next(
        line for line in lines if line["target"] == "guesser" and line["case_id"] == "capital-peru"
    )
    key = quote(json.dumps(["capitals", "capital-peru", "guesser", 0], separators=(",", ":")))
    address = f"{page.as_uri()}#open={key}"
    opened = dom(address, tmp_path / "profile")
    panel = opened[opened.index('<aside id="cell"') : opened.index("</aside>")]
    assert "hidden" not in panel[: panel.index(">")]
    assert "capital-peru · guesser — " in panel
    assert '<div class="role">user</div><pre>What is the capital of Peru?</pre>' in panel
    assert f'<pre class="answer">{chosen["answer"]}</pre>' in panel
    for evaluator in ("city", "country", "capital"):
        assert f"<td>{evaluator}</td>" in panel
    assert len(re.findall(r'class="chip o-\w+ opened"', opened)) == 1

    colours = picture(address, "matrix", tmp_path, (1280, 1500))
    assert colours[PASSED_GREEN] > 2000 and colours[FAILED_RED] > 500


def pair_address(page: Path, case: str, *sides: tuple[str, int]) -> str:
    key = ["capitals", case, *(value for side in sides for value in side)]
    return f"{page.as_uri()}#pair={quote(json.dumps(key, separators=(',', ':')))}"


def panel_of(shown: str) -> str:
    return shown[shown.index('<aside id="pair"') : shown.index("</aside>", shown.index('"pair"'))]


def test_a_case_shows_two_targets_answers_side_by_side(
    campaigns: tuple[Path, Path], tmp_path: Path
) -> None:
    """Italy's first answer of atlas beside guesser's second, each under its outcome and
    score, as the results file has them; the address keeps what is shown."""
    results, _ = campaigns
    page = results.with_suffix(".html")
    lines = read_jsonl(results)
    address = pair_address(page, "capital-italy", ("atlas", 0), ("guesser", 1))
    shown = dom(address, tmp_path / "profile")

    panel = panel_of(shown)
    assert "hidden" not in panel[: panel.index(">")]
    assert '<h2 id="pair-title" tabindex="-1">capital-italy · answers side by side</h2>' in panel
    assert re.search(r'<aside id="cell" hidden=""', shown)  # one panel at a time
    sides = re.findall(
        r'<section class="side" data-target="(\w+)" data-row="\d+">(.*?)</section>', panel
    )
    assert [target for target, _ in sides] == ["atlas", "guesser"]
    for (target, side), repeat in zip(sides, (0, 1), strict=True):
        line = one_result(lines, "capital-italy", target, repeat)
        outcome, score = outcome_of(line), line["score"]
        assert (
            f"<strong>{target}{f' #{repeat}' if repeat else ''}</strong>"
            f'<span class="chip o-{outcome}">{label_of(line)}</span>'
            f'<span class="{outcome}">{outcome}</span>'
            f'<span class="muted">{line["status"]} · score {score:.2f}</span>'
        ) in side
        why = why_of(line)
        answer = f'<pre class="answer">{line["answer"]}</pre>'
        below = f'<div class="role">why</div><p class="why">{why}</p>' if why else ""
        assert unescape(side).endswith(answer + below)
        choices = dict(re.findall(r'<select class="(side-\w+)">(.*?)</select>', side))
        assert re.findall(r'<option value="(\w+)"( selected="")?>', choices["side-target"]) == [
            (name, ' selected=""' if name == target else "")
            for name in ("atlas", "flaky", "guesser")
        ]
        assert re.findall(
            r'<option [^>]*?( selected="")?>#(\d)</option>', choices["side-repeat"]
        ) == [(' selected=""' if n == repeat else "", str(n)) for n in (0, 1)]
    assert '<p class="why">' not in sides[0][1]  # atlas passed: nothing missed

    picture(address, "pair", tmp_path, (1280, 900))
    # The panel is 1,120 pixels wide at the right; each half holds one column.
    atlas = colours(tmp_path / "pair.png", (170, 0, 720, 900))
    guesser = colours(tmp_path / "pair.png", (720, 0, 1280, 900))
    assert atlas[PASSED_GREEN] > 300 and atlas[FAILED_RED] == 0
    assert guesser[FAILED_RED] > 300 and guesser[PASSED_GREEN] == 0


KEYS = """
const record = (name, value) => document.body.setAttribute("data-" + name, value);
const shown = selector => [...document.querySelectorAll(selector)];
const sides = () => shown("#pair .side").map(s => s.dataset.target).join(" ");
const choose = (k, target) => {
  const select = document.querySelectorAll("#pair .side")[k].querySelector(".side-target");
  select.value = target;
  select.dispatchEvent(new Event("change"));
};
const opener = case_ => document.querySelector('#matrix tr[data-case="' + case_ + '"] .pair-open');
opener("capital-peru").focus();
opener("capital-peru").click();
record("focus-opened", document.activeElement.id);
record("first", sides());
choose(1, "guesser");
record("chosen", sides() + " / " + document.activeElement.className);
record("address", decodeURIComponent(location.hash));
choose(0, "guesser");
record("swapped", sides());
opener("capital-chile").focus();
opener("capital-chile").click();
record("next-case", sides());
setTimeout(() => {
  record("answers", shown("#pair pre.answer").map(p => p.textContent).join(" | "));
  document.dispatchEvent(new KeyboardEvent("keydown", {key: "Escape", bubbles: true}));
  record("closed", document.getElementById("pair").hidden + " " + location.hash);
  record("focus-closed", document.activeElement.getAttribute("aria-label"));
}, 200);
"""


def test_the_side_by_side_panel_is_worked_from_the_keyboard(
    campaigns: tuple[Path, Path], tmp_path: Path
) -> None:
    """The ⇆ of a case row is a button (Enter or Space presses it): it gives the focus to
    the panel, whose choices of target swap the columns rather than show one target
    twice and are kept for the next case; Esc closes it and gives the focus back."""
    results, _ = campaigns
    lines = read_jsonl(results)
    shown = dom(with_script(results.with_suffix(".html"), KEYS).as_uri(), tmp_path / "profile")

    def recorded(name: str) -> str:
        found = re.search(rf'data-{name}="([^"]*)"', shown)
        assert found is not None, name
        return unescape(found.group(1))

    assert recorded("focus-opened") == "pair-title"
    assert recorded("first") == "atlas flaky"  # the first two targets
    assert recorded("chosen") == "atlas guesser / side-target"  # the focus stays on the choice
    assert unquote(recorded("address")) == '#pair=["capitals","capital-peru","atlas",0,"guesser",0]'
    assert recorded("swapped") == "guesser atlas"
    assert recorded("next-case") == "guesser atlas"  # the last choice, for the next case
    chile = [one_result(lines, "capital-chile", t)["answer"] for t in ("guesser", "atlas")]
    assert recorded("answers") == " | ".join(map(str, chile))
    assert recorded("closed") == "true "  # and the address no longer holds it
    assert recorded("focus-closed") == "answers to capital-chile side by side"


def test_filters_and_the_view_are_kept_in_the_address(
    campaigns: tuple[Path, Path], tmp_path: Path
) -> None:
    results, _ = campaigns
    page = results.with_suffix(".html")
    chosen = (
        'const s = document.getElementById("f-target"); s.value = "flaky";'
        's.dispatchEvent(new Event("input"));'
        'document.getElementById("view-list").click();'
        "document.body.setAttribute('data-address', location.hash);"
    )
    acted = page.with_name("acted.html")
    acted.write_text(page.read_text().replace("</body>", f"<script>{chosen}</script></body>"))
    shown = dom(acted.as_uri(), tmp_path / "profile")
    assert 'data-address="#view=list&amp;target=flaky"' in shown

    one = dom(page.as_uri() + "#target=flaky", tmp_path / "profile")
    assert re.findall(r'<th data-target="(\w+)">', one[one.index('<table id="matrix">') :]) == [
        "flaky"
    ]

    errors = dom(page.as_uri() + "#outcome=error", tmp_path / "profile")
    matrix = errors[errors.index('<table id="matrix">') :]
    failed = [line for line in read_jsonl(results) if outcome_of(line) == "error"]
    assert re.findall(r'<tr data-case="([\w-]+)">', matrix) == sorted(
        {str(line["case_id"]) for line in failed}
    )
    assert len(re.findall(r'class="chip o-(\w+)"', matrix)) == len(failed)  # not faded
    assert set(re.findall(r'class="chip o-(\w+)"', matrix)) == {"error"}
    assert 'class="chip o-passed faded"' in matrix  # atlas's answers to the same cases


def test_compare_html_lists_regressions_first(campaigns: tuple[Path, Path], tmp_path: Path) -> None:
    before, after = campaigns
    page = tmp_path / "compare.html"
    done = subprocess.run(
        [
            sys.executable, "-m", "evalrelay", "compare", str(before), str(after),
            "--html", str(page),
        ],
        capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert done.returncode == 1, done.stdout + done.stderr  # atlas regressed
    assert f"html: {page}" in done.stdout
    shown = dom(page.as_uri(), tmp_path / "profile")
    rows = re.findall(r'<tr class="change-(\w+)"><td>([^<]+)</td><td>(\w+)</td>', shown)
    kinds = [kind for kind, _, _ in rows]
    # France and Italy run twice: five of atlas's jobs no longer pass.
    wrong = ["capital-france", "capital-france #1", "capital-italy", "capital-italy #1"]
    assert sorted(rows[:5]) == [("regressed", case, "atlas") for case in [*wrong, "capital-spain"]]
    assert "regressed" not in kinds[5:]
    assert "same" not in kinds  # unchanged cases are not listed without --all
    assert re.search(r'<p class="verdict bad" id="verdict">5 of 42 results regressed', shown)
    assert "<title>atlas: before 100%</title>" in shown
    assert "<title>atlas: after 64%</title>" in shown  # 9 of 14

    only = dom(page.as_uri() + "#change=regressed", tmp_path / "profile")
    assert re.findall(r'<tr class="change-(\w+)">', only) == ["regressed"] * 5

    colours = picture(page.as_uri(), "compare", tmp_path, (1280, 900))
    assert colours[FAILED_RED] > 300

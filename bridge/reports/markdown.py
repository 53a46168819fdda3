"""A Markdown summary: per target pass rate and mean score, then what failed and why.

Repeats of a case (`repeats: n`) make one row, with how many passed and the scores'
spread: n identical rows would only hide the other cases.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterable, Iterator
from itertools import groupby

from evalrelay.bridge.reports.campaign import CampaignResults
from evalrelay.bridge.reports.outcomes import Outcome, is_cached, outcome
from evalrelay.bridge.reports.statistics_text import mean_score_text, pairs_markdown, pass_rate_text
from evalrelay.bridge.reports.turns import turn_verdict, turn_why
from evalrelay.bridge.results.result import Result

WHY_CHARS = 200

PROBLEMS_HEADER = [
    "",
    "## Failures and errors",
    "",
    "One row per case and target; its repeats are counted in `runs`.",
    "",
    "| case | target | runs | passed | score | outcome | status | why |",
    "|---|---|---:|---:|---:|---|---|---|",
]


CONVERSATIONS_HEADER = [
    "",
    "## Conversations",
    "",
    "Each turn of each conversation-mode case, with its verdict.",
    "",
    "| case | target | turn | verdict | score | why |",
    "|---|---|---:|---|---:|---|",
]


def markdown_report(campaign: CampaignResults) -> str:
    return "".join(markdown_chunks(campaign))


def markdown_chunks(campaign: CampaignResults) -> Iterator[str]:
    """The summary, then a row per case with a problem, read one case at a time."""
    yield markdown_summary(campaign) + "\n"
    problems = (g for g in _by_case(campaign.results()) if any(map(_is_problem, g)))
    for count, group in enumerate(problems):
        if not count:
            yield "\n".join(PROBLEMS_HEADER) + "\n"
        yield _problem_row(group) + "\n"
    conversations = (r for r in campaign.results() if r.turns)
    for count, conversation in enumerate(conversations):
        if not count:
            yield "\n".join(CONVERSATIONS_HEADER) + "\n"
        yield "".join(row + "\n" for row in _turn_rows(conversation))


def _turn_rows(result: Result) -> Iterator[str]:
    name = result.case_id + (f" #{result.repeat}" if result.repeat else "")
    for turn in result.turns or ():
        score = "-" if turn.score is None else f"{turn.score:.2f}"
        yield (
            f"| {_cell(name)} | {_cell(result.target)} | {turn.turn} | {turn_verdict(turn)} "
            f"| {score} | {_cell(turn_why(turn)[:WHY_CHARS])} |"
        )


def markdown_summary(campaign: CampaignResults) -> str:
    """The counts and the table of targets, without the failures: `report` prints it."""
    summary = campaign.summary
    statuses = sorted(summary.counts)
    lines = [
        f"# Campaign `{campaign.campaign_id}`",
        "",
        f"{summary.results} results. " + ", ".join(f"{summary.counts[s]} {s}" for s in statuses),
        "",
        "| target | results | passed | pass rate | mean score | " + " | ".join(statuses) + " |",
        "|---|---:|---:|---:|---:|" + "---:|" * len(statuses),
    ]
    stats = summary.statistics()
    for name, target in sorted(summary.targets.items()):
        shown = stats.targets.get(name)
        rate = pass_rate_text(shown) if shown else "-"
        mean = "-" if target.mean_score is None else f"{target.mean_score:.3f}"
        mean = mean_score_text(shown) if shown else mean
        counts = " | ".join(str(target.counts.get(s, 0)) for s in statuses)
        lines.append(
            f"| {_cell(name)} | {target.results} | {target.passed}/{target.scored} | {rate} "
            f"| {mean} | {counts} |"
        )
    lines += ["", "[…]: 95% intervals."]
    if stats.pairs:
        lines += ["", pairs_markdown("Pairs of targets", stats.pairs).rstrip("\n")]
    if campaign.cached:
        lines += ["", f"{campaign.cached} answered from the response cache (`run --cache`)."]
    return "\n".join(lines)


def _by_case(results: Iterable[Result]) -> Iterator[list[Result]]:
    """The repeats of each case on each target together: they come one after another."""
    return (list(group) for _, group in groupby(results, key=_case))


def _case(result: Result) -> tuple[str, str, str]:
    return result.target, result.dataset, result.case_id


def _is_problem(result: Result) -> bool:
    return outcome(result) in (Outcome.FAILED, Outcome.ERROR)


def _problem_row(group: list[Result]) -> str:
    first, runs = group[0], len(group)
    cached = sum(map(is_cached, group))
    passed = sum(outcome(r) is Outcome.PASSED for r in group)
    return (
        f"| {_cell(first.case_id)} | {_cell(first.target)} "
        f"| {runs}{f' ({cached} cached)' if cached else ''} | {passed}/{runs} "
        f"| {_scores(group)} | {_tally([outcome(r).value for r in group])} "
        f"| {_tally([r.status.value for r in group])} | {_cell(_why(group)[:WHY_CHARS])} |"
    )


def _scores(group: list[Result]) -> str:
    """The mean score, and its range when repeats differ."""
    scores = [r.score for r in group if r.score is not None]
    if not scores:
        return "-"
    mean = f"{sum(scores) / len(scores):.2f}"
    low, high = min(scores), max(scores)
    return mean if low == high else f"{mean} ({low:.2f} to {high:.2f})"


def _tally(values: list[str]) -> str:
    """`failed` when every repeat agrees, else `2 failed, 1 passed`."""
    counts = Counter(values)
    if len(counts) == 1:
        return values[0]
    return ", ".join(f"{count} {value}" for value, count in counts.most_common())


def _why(group: list[Result]) -> str:
    """Each distinct reason once, in order, with how many repeats gave it."""
    reasons = Counter(_reason(r) for r in group if _is_problem(r))
    return "; ".join(
        f"{why} ({count} runs)" if count > 1 else why for why, count in reasons.items() if why
    )


def _reason(r: Result) -> str:
    return r.error.message if r.error else "; ".join(r.misses) or (r.reasoning or "")


def _cell(text: str) -> str:
    """Text shown as it is in a table cell: HTML as entities, Markdown's inline marks
    (links, images, code, emphasis) and the cell's `|` behind a backslash, on one line.
    Case ids, answers and error messages come from the agents and the eval files."""
    text = text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
    return MARKDOWN_MARK.sub(r"\\\g<0>", " ".join(text.splitlines()))


MARKDOWN_MARK = re.compile(r"[\\`*_\[\]~|!]")
"""Characters that start Markdown markup inside a line (GitHub's tables and strikethrough too)."""

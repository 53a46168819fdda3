"""`evalrelay report` and `evalrelay compare`: a finished campaign, for people and for CI."""

from __future__ import annotations

import json
import sys
from collections.abc import Sequence
from pathlib import Path

import click
from rich.cells import cell_len
from rich.table import Table

from evalrelay.bridge.cli.campaign_results import results_file, results_option
from evalrelay.bridge.cli.terminal import TerminalConsole, echo
from evalrelay.bridge.errors import EvalrelayError
from evalrelay.bridge.queue.rebuild import find_record, read_record
from evalrelay.bridge.reports.campaign import CampaignResults
from evalrelay.bridge.reports.case_places import case_places
from evalrelay.bridge.reports.compare import (
    SCORE_CHANGE,
    CaseChange,
    CaseState,
    Change,
    case_changes,
    case_order,
    split_target,
)
from evalrelay.bridge.reports.compare_html import write_compare_html
from evalrelay.bridge.reports.compare_statistics import (
    comparison_statistics,
    gate_failures,
    side_name,
)
from evalrelay.bridge.reports.github import (
    error_annotation,
    under_github_actions,
    write_step_summary,
)
from evalrelay.bridge.reports.markdown import markdown_summary
from evalrelay.bridge.reports.statistics_text import (
    mean_score_text,
    pair_lines,
    pairs_markdown,
    pass_rate_text,
)
from evalrelay.bridge.reports.verdict import ChangeCounts, TargetChange, target_changes, verdict
from evalrelay.bridge.reports.writer import report_path, write_report
from evalrelay.bridge.results.statistics import CampaignStatistics, PairStatistics
from evalrelay.bridge.results.summary import TargetSummary

EXIT_REGRESSED = 1


@click.command("report")
@click.argument("campaign")
@click.option(
    "--out", type=click.Path(path_type=Path, file_okay=False), help="Write all three here."
)
@click.option(
    "--html",
    "html_file",
    type=click.Path(path_type=Path, dir_okay=False),
    help="Write the HTML report (charts, the matrix of cases and targets) to this file.",
)
@click.option(
    "--junit",
    "junit_file",
    type=click.Path(path_type=Path, dir_okay=False),
    help="Write the JUnit XML report, a testcase per result, to this file, for CI.",
)
@click.option(
    "--markdown",
    "markdown_file",
    type=click.Path(path_type=Path, dir_okay=False),
    help="Write the Markdown summary to this file instead of printing it.",
)
@results_option
def report_command(
    campaign: str,
    out: Path | None,
    html_file: Path | None,
    junit_file: Path | None,
    markdown_file: Path | None,
    results: Path | None,
) -> None:
    """Write CAMPAIGN's HTML, JUnit XML and Markdown reports.

    CAMPAIGN is a .jsonl file, an id, the start of one, a name given to `run --name`, or
    `latest`. With no option, all three go next to the campaign's JSONL file; with
    --html, --junit or --markdown, only those (and, with --out too, the others there).
    """
    loaded = CampaignResults.load(results_file(campaign, results))
    chosen = {"html": html_file, "junit": junit_file, "markdown": markdown_file}
    if out is not None or not any(chosen.values()):
        folder = out or loaded.path.parent
        chosen = {
            kind: path or report_path(folder, loaded.campaign_id, kind)
            for kind, path in chosen.items()
        }
    for kind, path in chosen.items():
        if path is not None:
            echo(f"{kind}: {write_report(loaded, kind, path)}")
    if not markdown_file:
        echo(markdown_summary(loaded))


@click.command("compare")
@click.argument("before")
@click.argument("after", required=False)
@click.option(
    "--targets",
    nargs=2,
    metavar="BASELINE CANDIDATE",
    help="Set target BASELINE of BEFORE against target CANDIDATE of AFTER (of BEFORE "
    "when AFTER is not given).",
)
@click.option(
    "--tolerance",
    type=click.FloatRange(min=0),
    default=SCORE_CHANGE,
    show_default=True,
    help="A score falling by more than this is a regression.",
)
@click.option("--all", "show_all", is_flag=True, help="List unchanged cases too.")
@click.option(
    "--json",
    "as_json",
    is_flag=True,
    help="Print the statistics as JSON (per side and per pair; see docs/compare.md) instead of "
    "the tables.",
)
@click.option(
    "--gate",
    is_flag=True,
    help="Exit 1 only when a candidate scores lower than its baseline beyond noise (Holm-"
    "corrected p < 0.05) and by at least --min-effect; not on any single regressed case.",
)
@click.option(
    "--min-effect",
    type=click.FloatRange(min=0),
    default=0.0,
    show_default=True,
    help="With --gate: the smallest drop of mean score that fails it.",
)
@click.option(
    "--github",
    is_flag=True,
    help="Write the pairs to GitHub's step summary and an ::error annotation at the eval "
    "file line of each regressed case (on by itself when GITHUB_ACTIONS=true).",
)
@click.option(
    "--html",
    "html_file",
    type=click.Path(path_type=Path, dir_okay=False),
    help="Also write the comparison as a page, regressions first.",
)
@results_option
def compare_command(
    before: str,
    after: str | None,
    targets: tuple[str, str] | None,
    tolerance: float,
    show_all: bool,
    as_json: bool,
    gate: bool,
    min_effect: float,
    github: bool,
    html_file: Path | None,
    results: Path | None,
) -> None:
    """What changed from BEFORE to AFTER, per case and per target; exit 1 on a regression.

    BEFORE and AFTER are campaigns as `report` takes them; CAMPAIGN:TARGET takes one
    target of it, so `compare C:gpt C:claude` (or `compare C --targets gpt claude`) puts
    two targets of campaign C side by side. A case regressed when it passed in BEFORE and
    does not in AFTER, or when its score fell by more than --tolerance. Each pair of sides
    also gets its paired difference of mean score with a 95% interval and p-values; with
    --gate, only a difference beyond noise fails.
    """
    (old_id, old_target), (new_id, new_target) = sides(before, after, targets)
    old = CampaignResults.load(results_file(old_id, results))
    new = old if new_id == old_id else CampaignResults.load(results_file(new_id, results))
    pair = None
    if old_target or new_target:
        pair = (old_target or new_target or "", new_target or old_target or "")
    counts, listed = ChangeCounts(), []
    for change in case_changes(old, new, tolerance, targets=pair):
        counts.add(change)
        if show_all or change.change is not Change.SAME:
            listed.append(change)
    stats = comparison_statistics(old, new, pair)
    gated = gate_failures(stats, min_effect)
    title = f"{_label(old.campaign_id, old_target)} → {_label(new.campaign_id, new_target)}"
    rows = target_changes(old, new, counts, pair)
    conclusion = verdict(counts, tolerance)
    if as_json:
        echo(json.dumps(comparison_json(old, new, stats, counts, min_effect, gated), indent=2))
    else:
        console = TerminalConsole()
        compared = [pair] if pair else [(row.target, row.target) for row in rows]
        names = [(side_name(old, new, old, a), side_name(old, new, new, b)) for a, b in compared]
        console.print(target_table(title, rows, stats, names))
        echo("\n".join(case_lines(sorted(listed, key=case_order))) or "no case changed")
        if stats.pairs:
            console.print("\n".join(pair_lines(stats.pairs)))
        console.print(conclusion)
        if gate:
            console.print(gate_line(gated, min_effect))
    if github or under_github_actions():
        report_to_github(title, stats, listed, new, err=as_json)
    if html_file is not None:
        page = write_compare_html(html_file, title, listed, counts, rows, conclusion)
        echo(f"html: {page}", err=as_json)
    if gated if gate else counts.kinds[Change.REGRESSED]:
        sys.exit(EXIT_REGRESSED)


def comparison_json(
    old: CampaignResults,
    new: CampaignResults,
    stats: CampaignStatistics,
    counts: ChangeCounts,
    min_effect: float,
    gated: list[PairStatistics],
) -> dict[str, object]:
    """`compare --json`: the contract docs/compare.md documents."""
    return {
        "before": old.campaign_id,
        "after": new.campaign_id,
        **stats.model_dump(mode="json"),
        "cases": {kind.value: counts.kinds[kind] for kind in Change},
        "gate": {"min_effect": min_effect, "failed": [[p.a, p.b] for p in gated]},
    }


def gate_line(gated: list[PairStatistics], min_effect: float) -> str:
    if not gated:
        return f"gate passed: no candidate is worse beyond noise by {min_effect:g} or more"
    worse = ", ".join(f"{p.b} vs {p.a} ({p.difference:+.3f})" for p in gated)
    return f"gate failed: worse beyond noise by {min_effect:g} or more: {worse}"


def report_to_github(
    title: str,
    stats: CampaignStatistics,
    listed: list[CaseChange],
    new: CampaignResults,
    err: bool,
) -> None:
    """The pairs to the step summary; an annotation at each regressed case's line (on
    stderr when stdout carries JSON: GitHub reads commands from both)."""
    write_step_summary(pairs_markdown(f"evalrelay compare {title}", stats.pairs))
    places = case_places(campaign_sources(new.path))
    for change in listed:
        place = places.get(change.case_id)
        if change.change is Change.REGRESSED and place is not None:
            click.echo(
                error_annotation(
                    place[0],
                    place[1],
                    f"{change.case_id} regressed ({change.target})",
                    f"{_state(change.before)} → {_state(change.after)}",
                ),
                err=err,
            )


def campaign_sources(results: Path) -> list[str]:
    """The eval files a campaign was planned from, as the record beside its results keeps
    them; none when there is no record."""
    record = find_record(str(results), [])
    return read_record(record).info.sources if record is not None else []


def sides(
    before: str, after: str | None, targets: tuple[str, str] | None
) -> tuple[tuple[str, str | None], tuple[str, str | None]]:
    """Each side's campaign and target, from `BEFORE[:TARGET] [AFTER[:TARGET]] [--targets]`."""
    old, new = split_target(before), split_target(after or before)
    if targets is not None:
        if old[1] is not None or new[1] is not None:
            raise EvalrelayError("give the targets either as CAMPAIGN:TARGET or with --targets")
        return (old[0], targets[0]), (new[0], targets[1])
    if after is None:
        raise EvalrelayError(
            "compare needs two campaigns (BEFORE AFTER), two targets of one "
            "(CAMPAIGN --targets BASELINE CANDIDATE), or CAMPAIGN:TARGET on each side"
        )
    return old, new


def target_table(
    title: str, rows: list[TargetChange], stats: CampaignStatistics, names: list[tuple[str, str]]
) -> Table:
    """A row per target: its pass rate and mean score with their 95% intervals, and what its
    answers cost when either side's were priced, before → after."""
    table = Table(title=title, caption="[…]: 95% intervals")
    costed = any(side and side.cost_usd for row in rows for side in (row.before, row.after))
    columns = ("target", "pass rate", "mean score", *(["cost"] if costed else []))
    for column in (*columns, "regressed", "improved"):
        table.add_column(column, justify="left" if column == "target" else "right")
    for row, (old, new) in zip(rows, names, strict=True):
        a, b = stats.targets.get(old), stats.targets.get(new)
        cost = [f"{cost_text(row.before)} → {cost_text(row.after)}"] if costed else []
        table.add_row(
            row.target,
            f"{pass_rate_text(a)} → {pass_rate_text(b)}",
            f"{mean_score_text(a)} → {mean_score_text(b)}",
            *cost,
            str(row.regressed),
            str(row.improved),
        )
    return table


def cost_text(summary: TargetSummary | None) -> str:
    """Dollars, with `+` when some answers are unpriced; `unpriced` when none is priced,
    `-` when there is nothing to price."""
    if summary is None or not summary.cost_usd:
        return "unpriced" if summary is not None and summary.unpriced else "-"
    usd = f"${summary.cost_usd:.4f}" if summary.cost_usd >= 0.01 else f"${summary.cost_usd:.3g}"
    return usd + ("+" if summary.unpriced else "")


CASE_COLUMNS = ("case", "target", "change", "before", "after")


def case_lines(changes: Sequence[CaseChange]) -> list[str]:
    """The cases in aligned columns. Not a rich Table: it takes a third of a millisecond
    a row, half a minute for 100,000 cases."""
    rows = [
        (
            change.case_id + (f" #{change.repeat}" if change.repeat else ""),
            change.target,
            change.change.value,
            _state(change.before),
            _state(change.after),
        )
        for change in changes
    ]
    if not rows:
        return []
    widths = [max(map(cell_len, column)) for column in zip(CASE_COLUMNS, *rows, strict=True)]
    rule = tuple("─" * width for width in widths)
    return [_aligned(row, widths) for row in (CASE_COLUMNS, rule, *rows)]


def _aligned(cells: Sequence[str], widths: Sequence[int]) -> str:
    padded = (
        cell + " " * (width - cell_len(cell)) for cell, width in zip(cells, widths, strict=True)
    )
    return "  ".join(padded).rstrip()


def _label(campaign_id: str, target: str | None) -> str:
    return f"{campaign_id}:{target}" if target else campaign_id


def _state(state: CaseState | None) -> str:
    if state is None:
        return "-"
    score = "" if state.score is None else f" {state.score:.2f}"
    return f"{state.status.value}{score}"

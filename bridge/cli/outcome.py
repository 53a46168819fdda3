"""What a finished campaign tells the terminal: the summary table, the failed cases and
why, and the exit status (documented in docs/commands.md)."""

from __future__ import annotations

from pathlib import Path

import click
import redis
from rich.console import Console
from rich.table import Table
from rich.text import Text

from evalrelay.bridge.cli.follow import STATUS_STYLES
from evalrelay.bridge.cli.terminal import counted
from evalrelay.bridge.queue.campaigns import CampaignInfo
from evalrelay.bridge.reports.case_places import case_places
from evalrelay.bridge.reports.github import (
    error_annotation,
    under_github_actions,
    write_step_summary,
)
from evalrelay.bridge.reports.statistics_text import (
    mean_score_text,
    pair_lines,
    pairs_markdown,
    pass_rate_text,
)
from evalrelay.bridge.reports.writer import report_path
from evalrelay.bridge.results.collected import results_home, where_results_are
from evalrelay.bridge.results.result import Status
from evalrelay.bridge.results.results_file import results_path
from evalrelay.bridge.results.statistics import CampaignStatistics
from evalrelay.bridge.results.summary import CampaignSummary, FailedCase

SHOWN_FAILURES = 20

EXIT_OK, EXIT_CASES_FAILED, EXIT_UNANSWERED, EXIT_CANCELLED = 0, 1, 2, 3


def print_summary(
    console: Console, info: CampaignInfo, summary: CampaignSummary, where: str | None = None
) -> None:
    """`where`: the results file's host and path, when this command did not write it."""
    stats = summary.statistics()
    table = Table(title=f"campaign {info.campaign_id}", caption="[…]: 95% intervals")
    table.add_column("target", no_wrap=True)
    for column in ("results", "graded", "mean score", "passed", "pass rate"):
        table.add_column(column, justify="right")
    for status in sorted(summary.counts):
        table.add_column(status, justify="right", style=STATUS_STYLES.get(status, "red"))
    for name, target in sorted(summary.targets.items()):
        mean = target.mean_score
        shown = stats.targets.get(name)
        table.add_row(
            name,
            str(target.results),
            str(target.scored),
            mean_score_text(shown) if shown else "-" if mean is None else f"{mean:.3f}",
            f"{target.passed}/{target.scored}" if target.scored else "-",
            pass_rate_text(shown),
            *(str(target.counts.get(s, 0)) for s in sorted(summary.counts)),
        )
    console.print(table)
    if stats.pairs:
        console.print("\n".join(pair_lines(stats.pairs)))
    if under_github_actions():
        report_run_to_github(info, summary, stats)
    if summary.results > summary.scored:
        no_evaluator = summary.results - summary.scored - summary.unanswered
        why = [f"{no_evaluator} answered with no evaluator"] if no_evaluator else []
        why += [f"{summary.unanswered} without an answer"] if summary.unanswered else []
        console.print(
            f"{summary.results - summary.scored} of {counted(summary.results, 'result')} were not "
            f"graded ({', '.join(why)}): the mean score and passed count leave them out"
        )
    print_failures(console, summary)
    if where is not None:
        console.print(f"results: {where}")
        return
    console.print(f"results: {results_path(Path(info.out_dir), info.campaign_id)}")
    report = report_path(Path(info.out_dir), info.campaign_id, "html")
    if report.exists():
        console.print(f"report: {report}")


def report_run_to_github(
    info: CampaignInfo, summary: CampaignSummary, stats: CampaignStatistics
) -> None:
    """Under GitHub Actions: the pairs of targets to the step summary, and an `::error`
    annotation (on stdout, where GitHub reads them) at the eval file line of each failed
    case listed in the summary."""
    if stats.pairs:
        write_step_summary(pairs_markdown(f"evalrelay run {info.campaign_id}", stats.pairs))
    places = case_places(info.sources)
    for failure in summary.failures:
        place = places.get(failure.case_id)
        if place is not None:
            repeat = f" #{failure.repeat}" if failure.repeat else ""
            title = f"{failure.case_id}{repeat} failed ({failure.target})"
            click.echo(error_annotation(place[0], place[1], title, failure.reason))


def results_location(client: redis.Redis, info: CampaignInfo) -> str | None:
    """Where a campaign's results are, for a command that did not write them itself
    (None when it did: a campaign `run` collects)."""
    if info.collector == "run":
        return None
    return where_results_are(results_home(client, info.campaign_id), info.out_dir)


def print_failures(console: Console, summary: CampaignSummary) -> None:
    """Which cases failed and why, so a missing key or a bad answer shows without the JSONL."""
    if not summary.failures:
        return
    table = Table(title=f"{summary.failed} failed", title_justify="left")
    table.add_column("case", no_wrap=True)
    table.add_column("target", no_wrap=True)
    table.add_column("outcome")
    table.add_column("why")
    for failure in summary.failures[:SHOWN_FAILURES]:
        repeat = f" #{failure.repeat}" if failure.repeat else ""
        table.add_row(failure.case_id + repeat, failure.target, failed_as(failure), failure.reason)
    console.print(table)
    if summary.failed > SHOWN_FAILURES:
        console.print(f"... and {summary.failed - SHOWN_FAILURES} more: see the results file")


def failed_as(failure: FailedCase) -> Text:
    """`failed` for an answer graded below the bar (its status is `ok`: the call worked),
    else the status that kept it from passing (`timeout`, `infra_error`, ...)."""
    if failure.status in ("ok", "model_failure"):
        return Text("failed", style="red")
    return Text(failure.status, style=STATUS_STYLES.get(failure.status, "red"))


def exit_status(summary: CampaignSummary, min_score: float | None) -> tuple[int, str | None]:
    """3 when the campaign was cancelled (its jobs not started have `cancelled` lines); else
    2 when a job got no answer to grade; else 1 below `--min-score`, or, without it, when a
    case failed; else 0. The text says why, for the terminal."""
    cancelled = summary.counts.get(Status.CANCELLED.value, 0)
    if cancelled:
        return EXIT_CANCELLED, (
            f"exit {EXIT_CANCELLED}: the campaign was cancelled; {cancelled} of "
            f"{counted(summary.results, 'job')} never started"
        )
    if summary.unanswered:
        return EXIT_UNANSWERED, (
            f"exit {EXIT_UNANSWERED}: {summary.unanswered} of "
            f"{counted(summary.results, 'job')} ended without an answer to grade (see `why` above)"
        )
    if min_score is not None:
        mean = summary.mean_score()
        if mean is None or mean < min_score:
            shown = "no graded result" if mean is None else f"mean score {mean:.3f}"
            return EXIT_CASES_FAILED, f"exit 1: {shown} is below --min-score {min_score:.3f}"
        return EXIT_OK, None
    if summary.failed:
        return EXIT_CASES_FAILED, (
            f"exit 1: {summary.failed} of {counted(summary.results, 'result')} failed "
            "(use --min-score to pass on a mean score instead)"
        )
    return EXIT_OK, None

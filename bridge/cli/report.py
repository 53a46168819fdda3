"""`evalrelay report` and `evalrelay compare`: a finished campaign, for people and for CI."""

from __future__ import annotations

from pathlib import Path

import click
from rich.console import Console
from rich.table import Table

from bridge.reports.campaign import CampaignResults, find_results
from bridge.reports.compare import Change, compare
from bridge.reports.markdown import markdown_report
from bridge.reports.writer import report_path, write_report
from bridge.results.result import Result

results_option = click.option(
    "--results",
    type=click.Path(path_type=Path, file_okay=False),
    help="The results folder to find campaigns in (default: the project's).",
)


@click.command("report")
@click.argument("campaign")
@click.option(
    "--out", type=click.Path(path_type=Path, file_okay=False), help="Write all three here."
)
@click.option("--html", "html_file", type=click.Path(path_type=Path, dir_okay=False))
@click.option("--junit", "junit_file", type=click.Path(path_type=Path, dir_okay=False))
@click.option("--markdown", "markdown_file", type=click.Path(path_type=Path, dir_okay=False))
@results_option
def report_command(
    campaign: str,
    out: Path | None,
    html_file: Path | None,
    junit_file: Path | None,
    markdown_file: Path | None,
    results: Path | None,
) -> None:
    """Write CAMPAIGN's HTML, JUnit XML and Markdown reports (CAMPAIGN: an id or a .jsonl).

    With no option, all three go next to the campaign's JSONL file.
    """
    loaded = CampaignResults.load(find_results(campaign, results))
    chosen = {"html": html_file, "junit": junit_file, "markdown": markdown_file}
    if out is not None or not any(chosen.values()):
        folder = out or loaded.path.parent
        chosen = {
            kind: path or report_path(folder, loaded.campaign_id, kind)
            for kind, path in chosen.items()
        }
    for kind, path in chosen.items():
        if path is not None:
            click.echo(f"{kind}: {write_report(loaded, kind, path)}")
    if not markdown_file:
        click.echo(markdown_report(loaded).split("\n\n## ")[0])


@click.command("compare")
@click.argument("before")
@click.argument("after")
@click.option("--all", "show_all", is_flag=True, help="List unchanged cases too.")
@results_option
def compare_command(before: str, after: str, show_all: bool, results: Path | None) -> None:
    """What changed from campaign BEFORE to campaign AFTER, per case and per target."""
    old = CampaignResults.load(find_results(before, results))
    new = CampaignResults.load(find_results(after, results))
    changes = compare(old, new)
    console = Console()
    targets = Table(title=f"{old.campaign_id} → {new.campaign_id}")
    for column in ("target", "pass rate", "mean score", "regressed", "improved"):
        targets.add_column(column, justify="left" if column == "target" else "right")
    for name in sorted(old.summary.targets.keys() | new.summary.targets.keys()):
        mine = [c for c in changes if c.target == name]
        a, b = old.summary.targets.get(name), new.summary.targets.get(name)
        targets.add_row(
            name,
            f"{_rate(a.pass_rate if a else None)} → {_rate(b.pass_rate if b else None)}",
            f"{_mean(a.mean_score if a else None)} → {_mean(b.mean_score if b else None)}",
            str(sum(c.change is Change.REGRESSED for c in mine)),
            str(sum(c.change is Change.IMPROVED for c in mine)),
        )
    console.print(targets)
    cases = Table("case", "target", "change", "before", "after")
    for change in changes:
        if show_all or change.change is not Change.SAME:
            cases.add_row(
                change.case_id + (f" #{change.repeat}" if change.repeat else ""),
                change.target,
                change.change.value,
                _state(change.before),
                _state(change.after),
            )
    if cases.row_count:
        console.print(cases)
    else:
        console.print("no case changed")


def _state(result: Result | None) -> str:
    if result is None:
        return "-"
    score = "" if result.score is None else f" {result.score:.2f}"
    return f"{result.status.value}{score}"


def _rate(value: float | None) -> str:
    return "-" if value is None else f"{value:.0%}"


def _mean(value: float | None) -> str:
    return "-" if value is None else f"{value:.3f}"

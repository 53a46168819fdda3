"""`evalrelay export`: a finished campaign in another tool's format, for its own viewer."""

from __future__ import annotations

from pathlib import Path

import click

from bridge.cli.report import results_file, results_option
from bridge.cli.terminal import echo
from bridge.reports.campaign import CampaignResults
from bridge.reports.inspect_log import check_suffix, listing_hint, write_inspect_logs


@click.command("export")
@click.argument("campaign")
@click.option(
    "--inspect",
    "inspect_file",
    required=True,
    type=click.Path(path_type=Path, dir_okay=False),
    help="Write an Inspect AI eval log (.eval, or .json) for `inspect view`.",
)
@click.option(
    "--target", metavar="NAME", help="Export only this target's results, to FILE as given."
)
@results_option
def export_command(
    campaign: str, inspect_file: Path, target: str | None, results: Path | None
) -> None:
    """Write CAMPAIGN's results as an Inspect AI eval log.

    CAMPAIGN is what `report` takes. An Inspect log holds one model's run, so each
    target gets its own: with several targets, FILE's name gets the target's
    (`evals.eval` becomes `evals-gpt.eval`, `evals-claude.eval`), unless --target picks
    one. Each file written is printed.
    """
    check_suffix(inspect_file)  # before the campaign is read: it may be 100,000 results
    loaded = CampaignResults.load(results_file(campaign, results))
    for path in write_inspect_logs(loaded, inspect_file, target):
        echo(f"inspect: {path}")
        hint = listing_hint(path)
        if hint:
            echo(hint, err=True)

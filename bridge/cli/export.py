"""`evalrelay export`: a finished campaign in another tool's format, for its own viewer."""

from __future__ import annotations

from pathlib import Path

import click

from evalrelay.bridge.cli.campaign_results import results_file, results_option
from evalrelay.bridge.cli.terminal import echo
from evalrelay.bridge.errors import EvalrelayError
from evalrelay.bridge.reports.campaign import CampaignResults
from evalrelay.bridge.reports.harbor_job import write_harbor_job
from evalrelay.bridge.reports.inspect_log import check_suffix, listing_hint, write_inspect_logs


@click.command("export")
@click.argument("campaign")
@click.option(
    "--inspect",
    "inspect_file",
    type=click.Path(path_type=Path, dir_okay=False),
    help="Write an Inspect AI eval log (.eval, or .json) for `inspect view`.",
)
@click.option(
    "--harbor",
    "harbor_dir",
    type=click.Path(path_type=Path, file_okay=False),
    help="Write the container-task trials as a Harbor job folder under this folder, "
    "for `harbor view`.",
)
@click.option(
    "--target", metavar="NAME", help="Export only this target's results, to FILE as given."
)
@results_option
def export_command(
    campaign: str,
    inspect_file: Path | None,
    harbor_dir: Path | None,
    target: str | None,
    results: Path | None,
) -> None:
    """Write CAMPAIGN's results as an Inspect AI eval log, or as a Harbor job folder.

    CAMPAIGN is what `report` takes. An Inspect log holds one model's run, so each
    target gets its own: with several targets, FILE's name gets the target's
    (`evals.eval` becomes `evals-gpt.eval`, `evals-claude.eval`), unless --target picks
    one. A Harbor job folder (OUT/<campaign>/) holds every agent's trials of container
    tasks, each in Harbor's trial layout; other results are left out. Each file or
    folder written is printed.
    """
    if inspect_file is None and harbor_dir is None:
        raise EvalrelayError("export needs --inspect FILE or --harbor OUT (or both)")
    if inspect_file is not None:
        check_suffix(inspect_file)  # before the campaign is read: it may be 100,000 results
    loaded = CampaignResults.load(results_file(campaign, results))
    if inspect_file is not None:
        for path in write_inspect_logs(loaded, inspect_file, target):
            echo(f"inspect: {path}")
            hint = listing_hint(path)
            if hint:
                echo(hint, err=True)
    if harbor_dir is not None:
        exported = write_harbor_job(loaded, harbor_dir, target)
        echo(f"harbor: {exported.job_dir} ({exported.trials} trials)")
        if exported.left_out:
            echo(f"  {exported.left_out} results left out: not container-task trials", err=True)

"""`evalrelay resume`: send again the jobs of a campaign that have no result, and follow it."""

from __future__ import annotations

import sys

import click
from rich.console import Console

from bridge.cli.follow import follow_campaign
from bridge.cli.outcome import exit_status, print_summary, results_location
from bridge.queue.campaigns import load_info, missing_jobs, resolve_campaign, uncancel
from bridge.queue.runtime import open_runtime


@click.command("resume")
@click.argument("campaign")
@click.option(
    "--local-worker",
    is_flag=True,
    help="With EVALRELAY_REDIS_URL set, also run a worker in this process.",
)
def resume_command(campaign: str, local_worker: bool) -> None:
    """Enqueue only the jobs of CAMPAIGN with no result, then collect until it is complete.

    CAMPAIGN is an id, the start of one, a name given to `run --name`, or `latest`.
    """
    console = Console(stderr=True)
    with open_runtime(worker=True, force_local_worker=local_worker) as runtime:
        campaign = resolve_campaign(runtime.client, campaign)
        info = load_info(runtime.client, campaign)
        uncancel(runtime.client, campaign)
        missing = missing_jobs(runtime.client, campaign)
        runtime.queue.send(missing)
        console.print(
            f"campaign [bold]{campaign}[/]: {len(missing)} of {info.total} jobs sent again"
        )
        summary = follow_campaign(runtime.client, info, console, sent=[j.job_id for j in missing])
        where = results_location(runtime.client, info)
    print_summary(console, info, summary, where)
    code, why = exit_status(summary, None)
    if why:
        console.print(why)
    sys.exit(code)

"""`evalrelay retry`: run again the jobs of a campaign that ended in chosen statuses."""

from __future__ import annotations

import os
import socket
import sys
from collections.abc import Iterable
from pathlib import Path

import click
import redis

from bridge.cli.follow import follow_campaign
from bridge.cli.outcome import exit_status, print_summary, results_location
from bridge.cli.terminal import TerminalConsole, counted
from bridge.errors import EvalrelayError
from bridge.queue.blobs import store_blobs
from bridge.queue.campaigns import (
    CampaignInfo,
    load_info,
    resolve_campaign,
    store_jobs,
    stored_jobs,
    uncancel,
)
from bridge.queue.jobs import Job
from bridge.queue.rebuild import replan
from bridge.queue.runtime import open_runtime
from bridge.results.collected import file_here, forget_results, results_home
from bridge.results.collector import (
    COLLECTOR_LEASE_MS,
    collectors_of,
    hold_lease,
    release_lease,
)
from bridge.results.result import Result, Status
from bridge.results.results_file import read_results, remove_results, results_path
from bridge.results.retention import is_compacted, reopen


@click.command("retry")
@click.argument("campaign")
@click.option(
    "--status",
    "statuses",
    default="infra_error,timeout,rate_limited",
    show_default=True,
    help="Comma-separated statuses to run again.",
)
@click.option(
    "--local-worker",
    is_flag=True,
    help="With EVALRELAY_REDIS_URL set, also run a worker, forked from this command into a "
    "process of its own that ends with it.",
)
def retry_command(campaign: str, statuses: str, local_worker: bool) -> None:
    """Run again the jobs of CAMPAIGN whose result has one of the statuses.

    CAMPAIGN is an id, the start of one, a name given to `run --name`, or `latest`.
    The earlier lines move to <campaign>.attempts.jsonl and each new result lists the
    earlier attempts, so the main file keeps one line per job.
    """
    wanted = {Status(s.strip()) for s in statuses.split(",") if s.strip()}
    console = TerminalConsole(stderr=True)
    with open_runtime(worker=True, force_local_worker=local_worker) as runtime:
        campaign = resolve_campaign(runtime.client, campaign)
        info = load_info(runtime.client, campaign)
        path = file_here(runtime.client, campaign, results_path(Path(info.out_dir), campaign))
        if path is None:
            raise EvalrelayError(
                f"campaign {campaign}'s results file is "
                f"{results_home(runtime.client, campaign)}; run `evalrelay retry` on that host"
            )
        planned = list(_jobs_of(runtime.client, info))  # before any line moves
        moved = _move_chosen(runtime.client, campaign, path, wanted)
        earlier = {r.job_id: r for r in moved}
        jobs = [_again(job, earlier[job.job_id]) for job in planned if job.job_id in earlier]
        store_jobs(runtime.client, jobs)
        uncancel(runtime.client, campaign)
        runtime.queue.send(jobs)
        console.print(f"campaign [bold]{campaign}[/]: {counted(len(jobs), 'job')} sent again")
        summary = follow_campaign(runtime.client, info, console, sent=[j.job_id for j in jobs])
        where = results_location(runtime.client, info)
    print_summary(console, info, summary, where)
    code, why = exit_status(summary, None)
    if why:
        console.print(why)
    sys.exit(code)


def _again(job: Job, earlier: Result) -> Job:
    """The job's next attempt, carrying every earlier one: those its line listed (a job
    planned again knows none of them), and the line's own."""
    return job.model_copy(update={"previous_attempts": earlier.attempts}).retried(earlier.summary())


def _jobs_of(client: redis.Redis, info: CampaignInfo) -> Iterable[Job]:
    """The campaign's jobs: stored while it runs; once it is compacted, planned again from
    its eval files as a rebuild plans them, with their attached files stored again."""
    if not is_compacted(client, info.campaign_id):
        return stored_jobs(client, info.campaign_id)
    files, jobs = replan(info)
    store_blobs(client, (f for loaded in files for case in loaded.cases for f in case.files()))
    return jobs


def _move_chosen(
    client: redis.Redis, campaign: str, path: Path, wanted: set[Status]
) -> list[Result]:
    """Move the chosen lines to the attempts file, holding the campaign's collector lease
    meanwhile: a collector appending to the file while it is rewritten would lose lines,
    and would drop the new results of jobs it believes written. While a collector holds
    the lease (the campaign runs), this refuses rather than race it."""
    holder = f"retry-{os.getpid()}@{socket.gethostname()}"
    if not hold_lease(client, campaign, holder):
        collector = collectors_of(client, [campaign])[campaign] or "a collector"
        raise EvalrelayError(
            f"campaign {campaign} is still running and {collector} is writing its results "
            f"file; rewriting the file under it would lose results. Run `evalrelay retry "
            f"{campaign}` once the campaign has finished (a collector that died lets go of "
            f"it within {COLLECTOR_LEASE_MS // 1000} s)"
        )
    try:
        reopen(client, campaign, path)  # its record per job, back from the file
        chosen = {r.job_id for r in read_results(path) if r.status in wanted}
        moved = remove_results(path.parent, campaign, chosen)
        forget_results(client, campaign, moved)  # those jobs have no line now
        return moved
    finally:
        release_lease(client, campaign, holder)

"""`evalrelay resume`: send again the jobs of a campaign that were lost or cancelled, and
collect it when no one else does."""

from __future__ import annotations

import sys
from pathlib import Path

import click
import redis
from rich.console import Console

from bridge.cli.follow import follow_campaign
from bridge.cli.outcome import exit_status, print_summary, results_location
from bridge.cli.terminal import TerminalConsole, counted
from bridge.errors import EvalrelayError
from bridge.evalfile.project import Project
from bridge.queue.campaigns import (
    CampaignInfo,
    load_info,
    missing_jobs,
    progress,
    resolve_campaign,
    uncancel,
)
from bridge.queue.celery_queue import JobQueue
from bridge.queue.outstanding import not_sent
from bridge.queue.rebuild import find_record, read_record, rebuild
from bridge.queue.runtime import open_runtime
from bridge.results.collector import collectors_of
from bridge.results.results_file import read_results, results_path


@click.command("resume")
@click.argument("campaign")
@click.option(
    "--local-worker",
    is_flag=True,
    help="With EVALRELAY_REDIS_URL set, also run a worker, forked from this command into a "
    "process of its own that ends with it.",
)
def resume_command(campaign: str, local_worker: bool) -> None:
    """Enqueue only the jobs of CAMPAIGN with no result, then collect until it is complete.

    CAMPAIGN is an id, the start of one, a name given to `run --name`, or `latest`. A
    campaign this Redis lost (it restarted without its data) is rebuilt from its eval files
    and its results file: give its id, or the path of that file.
    """
    console = TerminalConsole(stderr=True)
    with open_runtime(worker=True, force_local_worker=local_worker) as runtime:
        client, queue = runtime.client, runtime.queue
        try:
            campaign = resolve_campaign(client, campaign)
        except EvalrelayError as exc:
            info = rebuilt(client, queue, campaign, exc, console)
            summary = follow_campaign(
                client, info, console, rebuild=lambda done: rebuild(client, queue, info, done)
            )
        else:
            info = load_info(client, campaign)
            if (
                not progress(client, campaign).finished
                and not collectors_of(client, [campaign])[campaign]
            ):
                info = info.model_copy(update={"collector": "run"})  # nobody else will
            uncancel(client, campaign)
            missing = missing_jobs(client, campaign)
            unsent = not_sent(client, missing)
            queue.send(unsent)
            console.print(resumed_text(campaign, info.total, len(missing), len(unsent)))
            summary = follow_campaign(client, info, console)
        where = results_location(client, info)
    print_summary(console, info, summary, where)
    code, why = exit_status(summary, None)
    if why:
        console.print(why)
    sys.exit(code)


def resumed_text(campaign: str, total: int, missing: int, unsent: int) -> str:
    """What `resume` did: jobs still queued, running or waiting to be collected are left
    alone (sending them again would only pay for them twice)."""
    waiting = missing - unsent
    left = f"; {waiting} still queued, running or waiting to be collected" if waiting else ""
    return f"campaign [bold]{campaign}[/]: {unsent} of {counted(total, 'job')} sent again{left}"


def rebuilt(
    client: redis.Redis, queue: JobQueue, text: str, unknown: EvalrelayError, console: Console
) -> CampaignInfo:
    """A campaign this Redis does not know, rebuilt from the record beside its results file
    (`text`: its id, or the path of that file); this command then collects it."""
    folders = [Path.cwd() / "results", Project.containing(Path.cwd()).results_dir]
    found = find_record(text, folders)
    if found is None:
        raise unknown  # it says when this Redis holds no evalrelay data at all
    info = read_record(found).info.model_copy(update={"collector": "run"})
    done = {r.job_id for r in read_results(results_path(Path(info.out_dir), info.campaign_id))}
    sent = rebuild(client, queue, info, done)
    console.print(
        f"campaign [bold]{info.campaign_id}[/] was not in this Redis (it lost its data): "
        f"rebuilt from its eval files and {found.parent}: {counted(len(done), 'result')} kept, "
        f"{counted(len(sent), 'job')} sent again"
    )
    return info

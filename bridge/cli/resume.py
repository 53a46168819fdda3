"""`evalrelay resume`: send again the jobs of a campaign that were lost or cancelled, and
collect it when no one else does."""

from __future__ import annotations

import sys
from pathlib import Path

import click
import redis
from rich.console import Console

from evalrelay.bridge.cli.follow import follow_campaign
from evalrelay.bridge.cli.outcome import exit_status, print_summary, results_location
from evalrelay.bridge.cli.terminal import TerminalConsole, counted
from evalrelay.bridge.contract.campaign_state import uncancel
from evalrelay.bridge.delivery.outstanding import not_sent
from evalrelay.bridge.errors import EvalrelayError
from evalrelay.bridge.keys import campaign_key
from evalrelay.bridge.queue.campaigns import (
    CampaignInfo,
    load_info,
    missing_jobs,
    progress,
    resolve_campaign,
)
from evalrelay.bridge.queue.celery_queue import JobQueue
from evalrelay.bridge.queue.rebuild import CampaignRecord, rebuild, record_of
from evalrelay.bridge.queue.rebuilt_apart import (
    eval_files_here,
    needs_jobs,
    restore_from_results,
    send_planned,
)
from evalrelay.bridge.queue.runtime import open_runtime
from evalrelay.bridge.results.collector import collectors_of
from evalrelay.bridge.results.paid import paid_again, paid_again_text
from evalrelay.bridge.results.results_file import job_ids_on_disk, results_path


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
        record: CampaignRecord | None = None
        try:
            campaign = resolve_campaign(client, campaign)
        except EvalrelayError as exc:
            record = record_of(campaign, exc)
            campaign = record.campaign_id
        if record is not None and not client.exists(campaign_key(campaign)):
            if record.dropped is None and not eval_files_here(record.info):
                restored(client, record, console)
                return
            info = rebuilt(client, queue, record, console)
            summary = follow_campaign(
                client,
                info,
                console,
                rebuild=lambda done: rebuild(client, queue, info, done, "resume"),
            )
        else:  # known to Redis (rebuilt already, maybe by the `collect` service)
            info = load_info(client, campaign)
            if (
                not progress(client, campaign).finished
                and not collectors_of(client, [campaign])[campaign]
            ):
                info = info.model_copy(update={"collector": "run"})  # nobody else will
            uncancel(client, campaign)
            if needs_jobs(client, campaign):
                planned = send_planned(client, queue, campaign, "resume")
                if planned is not None:
                    console.print(planned_text(campaign, info.total, len(planned)))
            missing = missing_jobs(client, campaign)
            unsent = not_sent(client, missing)
            queue.send(unsent)
            console.print(resumed_text(campaign, info.total, len(missing), len(unsent)))
            summary = follow_campaign(client, info, console)
        where = results_location(client, info)
        paid = paid_again(client, info.campaign_id)
    print_summary(console, info, summary, where)
    if paid:
        console.print(paid_again_text(paid))
    code, why = exit_status(summary, None)
    if why:
        console.print(why)
    sys.exit(code)


def resumed_text(campaign: str, total: int, missing: int, unsent: int) -> str:
    """What `resume` did: jobs still queued, running or waiting to be collected are left
    alone (sending them again would only pay for them twice)."""
    waiting = missing - unsent
    left = f"; {waiting} still queued, running or waiting to be collected" if waiting else ""
    return f"campaign {campaign}: {unsent} of {counted(total, 'job')} sent again{left}"


def planned_text(campaign: str, total: int, sent: int) -> str:
    return (
        f"campaign {campaign} had lost its jobs with Redis's data: planned again "
        f"from its eval files here, {sent} of {counted(total, 'job')} without a line sent"
    )


def restored(client: redis.Redis, record: CampaignRecord, console: Console) -> None:
    """A campaign this Redis lost, on a host with its results file but not its eval files:
    made known again with the results it kept; its jobs are sent from the other host."""
    info = record.info
    results = results_path(Path(info.out_dir), info.campaign_id)
    kept = restore_from_results(client, info, results, "resume")
    if kept is None:
        raise EvalrelayError(
            f"campaign {info.campaign_id} was rebuilt by another process meanwhile; "
            f"`evalrelay status {info.campaign_id}` says what it still lacks"
        )
    cwd = info.plan.cwd if info.plan else None
    console.print(
        f"campaign {info.campaign_id} was not in this Redis (it lost its data): made "
        f"known again from {results}, {counted(kept, 'result')} kept. Its eval files "
        f"({', '.join(info.sources)}) are not on this host: run `evalrelay resume "
        f"{info.campaign_id}` in {cwd or 'the folder it was run from'} on the host that has "
        "them, to send the jobs without a line",
        soft_wrap=True,
    )


def rebuilt(
    client: redis.Redis, queue: JobQueue, record: CampaignRecord, console: Console
) -> CampaignInfo:
    """A campaign this Redis lost, rebuilt from its record and results file; this command
    then collects it. One dropped in an inbox is left to a watcher of that inbox."""
    if record.dropped is not None:
        raise EvalrelayError(
            f"campaign {record.campaign_id} was dropped in the inbox {record.dropped.inbox}: "
            "a watcher of that inbox rebuilds it from its file in queued/ with the watcher's "
            f"own configuration; start `evalrelay watch {record.dropped.inbox}` if none runs"
        )
    info = record.info.model_copy(update={"collector": "run"})
    results = results_path(Path(info.out_dir), info.campaign_id)
    done = job_ids_on_disk(results)
    sent = rebuild(client, queue, info, done, "resume")
    if sent is None:
        raise EvalrelayError(
            f"campaign {info.campaign_id} was rebuilt by another process meanwhile; "
            f"`evalrelay resume {info.campaign_id}` sends what it still lacks"
        )
    console.print(
        f"campaign {info.campaign_id} was not in this Redis (it lost its data): "
        f"rebuilt from its eval files and {results.parent}: "
        f"{counted(len(done), 'result')} kept, {counted(len(sent), 'job')} sent again"
    )
    return info

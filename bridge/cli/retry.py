"""`evalrelay retry`: run again the jobs of a campaign that ended in chosen statuses."""

from __future__ import annotations

import os
import socket
import sys
import time
from collections.abc import Iterable
from pathlib import Path

import click
import redis

from evalrelay.bridge.cli.follow import follow_campaign
from evalrelay.bridge.cli.outcome import exit_status, print_summary, results_location
from evalrelay.bridge.cli.terminal import TerminalConsole, counted
from evalrelay.bridge.contract.campaign_state import uncancel
from evalrelay.bridge.contract.job import Job
from evalrelay.bridge.errors import EvalrelayError
from evalrelay.bridge.queue.blobs import store_blobs
from evalrelay.bridge.queue.campaigns import (
    CampaignInfo,
    load_info,
    resolve_campaign,
    store_jobs,
    stored_jobs,
)
from evalrelay.bridge.queue.rebuild import replan
from evalrelay.bridge.queue.runtime import open_runtime
from evalrelay.bridge.queue.steering import Change, record, who
from evalrelay.bridge.results.collected import file_here, results_home
from evalrelay.bridge.results.collector import collectors_of, hold_lease, release_lease
from evalrelay.bridge.results.paid import paid_again, paid_again_text
from evalrelay.bridge.results.result import AttemptSummary, Status
from evalrelay.bridge.results.results_file import results_path, whole_results
from evalrelay.bridge.results.retention import is_compacted, reopen
from evalrelay.bridge.results.retry_request import (
    RetryAnswer,
    RetryRequest,
    answer_to,
    post_request,
    withdraw,
)
from evalrelay.bridge.results.set_aside import set_aside

ANSWER_SECONDS = float(os.environ.get("EVALRELAY_RETRY_ANSWER_SECONDS", "30"))
"""How long `retry` waits for a running campaign's collector to set lines aside."""

ANSWER_POLL_SECONDS = 0.1


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
    """Run again the jobs of CAMPAIGN whose result has one of the statuses, while it runs
    or after it ended.

    CAMPAIGN is an id, the start of one, a name given to `run --name`, or `latest`.
    The earlier lines move to <campaign>.attempts.jsonl and each new result lists the
    earlier attempts, so the main file keeps one line per job. While a collector writes
    the campaign, it is that collector which moves the lines, asked through Redis.
    """
    wanted = [Status(s.strip()) for s in statuses.split(",") if s.strip()]
    console = TerminalConsole(stderr=True)
    with open_runtime(worker=True, force_local_worker=local_worker) as runtime:
        campaign = resolve_campaign(runtime.client, campaign)
        info = load_info(runtime.client, campaign)
        path = results_path(Path(info.out_dir), campaign)
        planned = list(_jobs_of(runtime.client, info, path, wanted))  # before any line moves
        earlier, collector = _set_aside(runtime.client, campaign, path, wanted)
        jobs = [job.retried(earlier[job.job_id]) for job in planned if job.job_id in earlier]
        store_jobs(runtime.client, jobs)
        uncancel(runtime.client, campaign)
        runtime.queue.send(jobs)
        by = f" (lines set aside by its collector {collector})" if collector else ""
        chosen = ",".join(s.value for s in wanted)
        detail = f"{counted(len(jobs), 'job')} sent again ({chosen}){by}"
        change = Change(action="retry", at=time.time(), by=who(), detail=detail)
        record(runtime.client, campaign, change)
        console.print(f"campaign {campaign}: {counted(len(jobs), 'job')} sent again{by}")
        summary = follow_campaign(
            runtime.client, info, console, sent=[j.job_id for j in jobs], collect=not collector
        )
        where = results_location(runtime.client, info)
        paid = paid_again(runtime.client, info.campaign_id)
    print_summary(console, info, summary, where)
    if paid:
        console.print(paid_again_text(paid))
    code, why = exit_status(summary, None)
    if why:
        console.print(why)
    sys.exit(code)


def _set_aside(
    client: redis.Redis, campaign: str, default: Path, wanted: list[Status]
) -> tuple[dict[str, AttemptSummary], str | None]:
    """Set the chosen lines aside: here, holding the campaign's collector lease, when no
    collector writes the file; else by that collector, asked through Redis (rewriting the
    file under it would lose lines). The attempts moved, and the collector that moved them."""
    deadline = time.monotonic() + ANSWER_SECONDS
    while True:
        holder = f"retry-{os.getpid()}@{socket.gethostname()}"
        if hold_lease(client, campaign, holder):
            try:
                return _set_aside_here(client, campaign, default, wanted), None
            finally:
                release_lease(client, campaign, holder)
        request = post_request(client, campaign, wanted, who())
        if request is None:
            raise EvalrelayError(
                f"another `evalrelay retry {campaign}` is waiting for the campaign's collector; "
                f"run this one once it has finished"
            )
        reply = _wait_for_answer(client, campaign, request, deadline)
        if reply is None:
            continue  # the collector let go of the campaign before taking the request
        if reply.error:
            raise EvalrelayError(
                f"campaign {campaign}'s collector {reply.collector} could not set the lines "
                f"aside ({reply.error}); nothing was sent again"
            )
        return reply.moved, reply.collector


def _set_aside_here(
    client: redis.Redis, campaign: str, default: Path, wanted: list[Status]
) -> dict[str, AttemptSummary]:
    path = file_here(client, campaign, default)
    if path is None:
        raise EvalrelayError(
            f"campaign {campaign}'s results file is {results_home(client, campaign)}; "
            f"run `evalrelay retry` on that host"
        )
    return {r.job_id: r.summary() for r in set_aside(client, campaign, path, set(wanted))}


def _wait_for_answer(
    client: redis.Redis, campaign: str, request: RetryRequest, deadline: float
) -> RetryAnswer | None:
    """The collector's answer; None when no collector holds the campaign any more and the
    request was withdrawn untaken (then the lines can be set aside here)."""
    while True:
        reply = answer_to(client, request)
        if reply is not None:
            return reply
        gone = collectors_of(client, [campaign])[campaign] is None
        if (gone or time.monotonic() > deadline) and withdraw(client, campaign, request):
            if gone:
                return None
            collector = collectors_of(client, [campaign])[campaign] or "its collector"
            raise EvalrelayError(
                f"campaign {campaign} is running and {collector} writes its results file, but "
                f"did not answer the request to set lines aside within {ANSWER_SECONDS:.0f} s "
                f"(an evalrelay older than `retry` during a run, or one stuck on its disk: "
                f"see `evalrelay status`); nothing was moved or sent again. Try again, or once "
                f"the campaign has finished"
            )
        if time.monotonic() > deadline + ANSWER_SECONDS:
            raise EvalrelayError(
                f"campaign {campaign}'s collector took the request to set lines aside but did "
                f"not answer; some lines may be in {campaign}.attempts.jsonl and their jobs not "
                f"sent again: `evalrelay resume {campaign}` sends every job without a result"
            )
        time.sleep(ANSWER_POLL_SECONDS)


def _jobs_of(
    client: redis.Redis, info: CampaignInfo, path: Path, wanted: list[Status]
) -> Iterable[Job]:
    """The campaign's jobs: stored while it runs, but for those collected `ok`, whose
    stored copy went with their line (`bridge.results.collected.count`); once it is
    compacted, or when `ok` lines are to run again, planned again from its eval files as
    a rebuild plans them (attached files stored again), each carrying the earlier
    attempts its line lists, a compacted campaign's record per job made again in Redis.
    An error (the files are gone, the campaign is a watcher's) comes before any line moves."""
    compacted = is_compacted(client, info.campaign_id)
    if not compacted and Status.OK not in wanted:
        return stored_jobs(client, info.campaign_id)
    files, jobs = replan(info)
    store_blobs(client, (f for loaded in files for case in loaded.cases for f in case.files()))
    here = file_here(client, info.campaign_id, path)
    if here is None:
        raise EvalrelayError(
            f"campaign {info.campaign_id}'s results file is "
            f"{results_home(client, info.campaign_id)}; run `evalrelay retry` on that host"
        )
    reopen(client, info.campaign_id, here)
    stored = {} if compacted else {j.job_id: j for j in stored_jobs(client, info.campaign_id)}
    attempts = {r.job_id: r.attempts for r in whole_results(here)}
    planned = (j.model_copy(update={"previous_attempts": attempts.get(j.job_id, [])}) for j in jobs)
    return [stored.get(j.job_id, j) for j in planned]

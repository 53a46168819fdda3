"""`evalrelay regrade`: grade a finished campaign's recorded answers again, with the eval
files' current evaluators, as a new campaign; no target is called."""

from __future__ import annotations

import sys
from pathlib import Path

import click
import redis

from evalrelay.bridge.cli.follow import follow_campaign
from evalrelay.bridge.cli.outcome import exit_status, print_summary
from evalrelay.bridge.cli.terminal import TerminalConsole, counted
from evalrelay.bridge.errors import EvalrelayError
from evalrelay.bridge.evalfile.cases import LoadedEvalFile, load_eval_files
from evalrelay.bridge.evalfile.env_files import load_env_files
from evalrelay.bridge.evalfile.selection import case_chosen, select_cases
from evalrelay.bridge.queue.campaigns import (
    CampaignInfo,
    Plan,
    load_info,
    new_campaign_id,
    progress,
    resolve_campaign,
    submit,
)
from evalrelay.bridge.queue.rebuild import rebuild, record_of, write_record
from evalrelay.bridge.queue.regrade import plan_regrade
from evalrelay.bridge.queue.runtime import open_runtime
from evalrelay.bridge.results.collected import file_here, results_home
from evalrelay.bridge.results.results_file import read_results, results_path


@click.command("regrade")
@click.argument("campaign")
@click.option(
    "--eval",
    "eval_paths",
    multiple=True,
    type=click.Path(exists=True, path_type=Path),
    help="The eval file (or folder) whose current evaluators grade the answers; "
    "repeatable (default: the campaign's own eval files).",
)
@click.option(
    "--case",
    "case_patterns",
    multiple=True,
    help="Grade again only the cases whose id matches (a glob like 'geo-*'; repeatable).",
)
@click.option("--name", help="A name for the new campaign.")
@click.option(
    "--local-worker",
    is_flag=True,
    help="With EVALRELAY_REDIS_URL set, also run a worker, forked from this command into a "
    "process of its own that ends with it.",
)
def regrade_command(
    campaign: str,
    eval_paths: tuple[Path, ...],
    case_patterns: tuple[str, ...],
    name: str | None,
    local_worker: bool,
) -> None:
    """Grade the answers CAMPAIGN recorded with the eval files' current evaluators.

    CAMPAIGN is an id, the start of one, a name given to `run --name`, or `latest`. The
    grades go to a new campaign, beside the old one's results; compare them with
    `evalrelay compare CAMPAIGN NEW`. No target is called; LLM judges are. Results
    without an answer (an infra_error, a timeout) keep their status, ungraded.
    """
    console = TerminalConsole(stderr=True)
    with open_runtime(worker=True, force_local_worker=local_worker) as runtime:
        client = runtime.client
        old, path = recorded_campaign(client, campaign)
        files = select_cases(
            load_eval_files(eval_paths) if eval_paths else own_files(old), case_patterns
        )
        tasks = [str(f.path.parent) for f in files if f.task is not None]
        if tasks:
            raise EvalrelayError(
                f"{', '.join(tasks[:3])}: a container task is graded by its own tests inside "
                "its container, which is gone after its trial; run it again instead"
            )
        stem = files[0].dataset if len(files) == 1 else "campaign"
        campaign_id = new_campaign_id(files, name=name or f"{stem}-regrade")
        recorded = [r for r in read_results(path) if case_chosen(r.case_id, case_patterns)]
        planned = plan_regrade(campaign_id, files, recorded)
        if not planned.jobs:
            raise EvalrelayError(
                f"campaign {old.campaign_id} has no result for a case of "
                f"{', '.join(str(f.path) for f in files)}: nothing to grade again"
            )
        if runtime.embedded or local_worker:
            load_env_files((f.path, f.project.root) for f in files)  # judges' keys
        info = CampaignInfo.for_jobs(
            campaign_id,
            planned.jobs,
            [str(f.path) for f in files],
            str(path.parent),
            "run",
            name=name,
            plan=Plan(regrades=str(path.resolve()), cwd=str(Path.cwd())),
        )
        write_record(info)
        submit(client, runtime.queue, info, planned.jobs, files)
        console.print(
            f"campaign {campaign_id}: {counted(len(planned.jobs), 'result')} "
            f"of {old.campaign_id} graded again, no target called"
        )
        if planned.left_out:
            gone = sorted({r.case_id for r in planned.left_out})
            console.print(
                f"{counted(len(planned.left_out), 'result')} left out: cases no longer in "
                f"the eval files ({', '.join(gone[:5])}{' …' if len(gone) > 5 else ''})"
            )
        summary = follow_campaign(
            client,
            info,
            console,
            rebuild=lambda done: rebuild(client, runtime.queue, info, done, "regrade"),
        )
    print_summary(console, info, summary)
    code, why = exit_status(summary, None)
    if why:
        console.print(why)
    sys.exit(code)


def recorded_campaign(client: redis.Redis, text: str) -> tuple[CampaignInfo, Path]:
    """The campaign named by `text` (known to Redis, or by its record beside its results)
    and its results file on this host."""
    try:
        campaign = resolve_campaign(client, text)
        info = load_info(client, campaign)
    except EvalrelayError as exc:
        info = record_of(text, exc).info
        campaign = info.campaign_id
    path = file_here(client, campaign, results_path(Path(info.out_dir), campaign))
    if path is None:
        raise EvalrelayError(
            f"campaign {campaign}'s results file is {results_home(client, campaign)}; "
            "run `evalrelay regrade` on that host"
        )
    if not path.exists():
        raise EvalrelayError(f"campaign {campaign} has no results file at {path} yet")
    done = progress(client, campaign)
    if done.known and not done.finished:
        raise EvalrelayError(
            f"campaign {campaign} is not finished ({done.done} of {done.total} results); "
            f"regrade it when it is, or `evalrelay resume {campaign}` first"
        )
    return info, path


def own_files(info: CampaignInfo) -> list[LoadedEvalFile]:
    """The campaign's eval files as they are now, found from where it was started."""
    base = Path(info.plan.cwd) if info.plan and info.plan.cwd else Path.cwd()
    return load_eval_files(tuple(base / source for source in info.sources))

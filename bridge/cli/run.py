"""`evalrelay run`: submit a campaign, show its progress, collect its results, summarise."""

from __future__ import annotations

import logging
import sys
from pathlib import Path
from typing import TYPE_CHECKING

import click
from rich.console import Console
from rich.table import Table

from bridge.cli.env_files import load_env_files
from bridge.cli.follow import follow_campaign
from bridge.cli.outcome import exit_status, print_summary
from bridge.cli.terminal import TerminalConsole, counted, echo
from bridge.connection import configured_url
from bridge.contract.campaign_state import cancel
from bridge.contract.job import Job
from bridge.evalfile.cases import LoadedEvalFile, load_eval_files
from bridge.evalfile.limits import MAX_REPEATS
from bridge.evalfile.selection import select_cases
from bridge.planning.campaigns import plan_jobs
from bridge.queue.budget import set_budget
from bridge.queue.campaigns import CampaignInfo, Plan, new_campaign_id, submit
from bridge.queue.rebuild import rebuild, write_record
from bridge.queue.runtime import open_runtime
from bridge.queue.steering import who
from bridge.reports.promptfoo_json import write_promptfoo_outputs
from bridge.reports.writer import ensure_html_beside
from bridge.results.paid import paid_again, paid_again_text
from bridge.results.results_file import results_path
from bridge.targets.targets_file import Targets

if TYPE_CHECKING:
    from bridge.queue.estimate import TargetEstimate

log = logging.getLogger(__name__)


@click.command("run")
@click.argument("paths", nargs=-1, required=True, type=click.Path(exists=True, path_type=Path))
@click.option(
    "--target",
    "target_options",
    multiple=True,
    metavar="NAME[,NAME...]",
    help="Run every case on this target; several (`--target a,b`, or the option again) run "
    "every case on each of them, in one campaign.",
)
@click.option(
    "--case",
    "case_patterns",
    multiple=True,
    help="Run only the cases whose id matches (a glob like 'geo-*'; repeatable).",
)
@click.option("--tag", "tags", multiple=True, help="Run only the cases with this tag (repeatable).")
@click.option("--name", help="A name for the campaign; other commands take it for its newest one.")
@click.option(
    "--repeats",
    type=click.IntRange(min=1, max=MAX_REPEATS),
    help="Run each case this many times.",
)
@click.option(
    "--out",
    type=click.Path(file_okay=False, path_type=Path),
    help="Results folder (default: the project's results_dir, `results`).",
)
@click.option(
    "--local-worker",
    is_flag=True,
    help="With EVALRELAY_REDIS_URL set, also run a worker, forked from this command into a "
    "process of its own that ends with it.",
)
@click.option(
    "--detach",
    is_flag=True,
    help="Submit and exit; an `evalrelay collect` service writes the results.",
)
@click.option(
    "--min-score",
    type=click.FloatRange(0, 1),
    help="Exit 1 only when the mean score is below this (default: when any case fails).",
)
@click.option(
    "--cache", is_flag=True, help="Answer repeated API requests from a response cache in Redis."
)
@click.option(
    "--cache-ttl",
    type=click.IntRange(min=1),
    default=7 * 24 * 3600,
    show_default=True,
    help="Seconds a cached answer stays valid.",
)
@click.option(
    "--concurrency",
    type=click.IntRange(min=1),
    default=16,
    show_default=True,
    help="Jobs at once in the in-process worker.",
)
@click.option(
    "--estimate",
    is_flag=True,
    help="Print the jobs, tokens and dollars each target would take, and send nothing.",
)
@click.option(
    "--budget-usd",
    type=click.FloatRange(min=0, min_open=True),
    help="Pause the campaign once its answers cost this many dollars, across all workers.",
)
def run_command(
    paths: tuple[Path, ...],
    target_options: tuple[str, ...],
    case_patterns: tuple[str, ...],
    tags: tuple[str, ...],
    name: str | None,
    repeats: int | None,
    out: Path | None,
    local_worker: bool,
    detach: bool,
    min_score: float | None,
    cache: bool,
    cache_ttl: int,
    concurrency: int,
    budget_usd: float | None,
    estimate: bool,
) -> None:
    """Run the eval files (or folders of them) in PATHS as one campaign."""
    if detach and configured_url() is None:
        raise click.UsageError(DETACH_NEEDS_A_CLUSTER)
    targets = [n.strip() for option in target_options for n in option.split(",") if n.strip()]
    files = select_cases(load_eval_files(paths), case_patterns, tags)
    campaign_id = new_campaign_id(files, name=name)
    jobs = plan_jobs(campaign_id, files, targets, repeats)
    if cache:
        jobs = [job.model_copy(update={"cache_ttl_seconds": cache_ttl}) for job in jobs]
    if estimate:
        from bridge.queue.estimate import estimate as estimate_jobs  # its price database

        TerminalConsole().print(estimate_table(estimate_jobs(jobs)))
        return
    out_dir = (out or default_out(files)).resolve()
    console = TerminalConsole(stderr=True)
    if not detach and (local_worker or configured_url() is None):
        load_env_files((f.path, f.project.root) for f in files)  # this process is the worker
    with open_runtime(
        worker=not detach,
        force_local_worker=local_worker,
        concurrency=concurrency,
        await_worker=False,
    ) as runtime:
        if runtime.embedded or local_worker:
            check_targets_here(files, jobs)
        info = CampaignInfo.for_jobs(
            campaign_id,
            jobs,
            [str(f.path) for f in files],
            str(out_dir),
            "service" if detach else "run",
            name=name,
            plan=Plan(
                targets=targets,
                repeats=repeats,
                cases=list(case_patterns),
                tags=list(tags),
                cache_ttl_seconds=cache_ttl if cache else None,
                cwd=str(Path.cwd()),
            ),
        )
        if not detach:
            write_record(info)  # what rebuilds the campaign should Redis lose it
        if budget_usd is not None:  # before any job is sent, so every answer is charged
            set_budget(runtime.client, campaign_id, budget_usd, who())
        submit(runtime.client, runtime.queue, info, jobs, files)
        if detach:
            echo(campaign_id)
            return
        runtime.worker_ready()  # it started while the jobs were planned and sent
        console.print(f"campaign {campaign_id}: {counted(len(jobs), 'job')}")
        complete: list[Path] = []  # its report is written once the summary is printed
        try:
            final = follow_campaign(
                runtime.client,
                info,
                console,
                rebuild=lambda done: rebuild(runtime.client, runtime.queue, info, done, "run"),
                on_complete=complete.append,
            )
            paid = paid_again(runtime.client, campaign_id)
        except KeyboardInterrupt:
            cancel(runtime.client, campaign_id)
            console.print(
                f"cancelled; finished results are in {out_dir}. "
                f"Continue with `evalrelay resume {campaign_id}`."
            )
            sys.exit(130)
        runtime.stop_worker()  # it winds down while the summary is printed
        print_summary(console, info, final)
        if paid:
            console.print(paid_again_text(paid))
        for results in dict.fromkeys(complete):  # the collector may say so twice
            write_report_beside(console, results)
        for loaded in files:  # a promptfoo config's `outputPath`, in promptfoo's shape
            if loaded.task is not None:
                continue  # a task.toml is no promptfoo config
            for written in write_promptfoo_outputs(
                loaded.path, campaign_id, results_path(out_dir, campaign_id)
            ):
                console.print(f"promptfoo results: {written}")
    code, why = exit_status(final, min_score)
    if why:
        console.print(why)
    sys.exit(code)


DETACH_NEEDS_A_CLUSTER = (
    "--detach leaves the campaign to a worker and a collector that outlive this command, and "
    "with no EVALRELAY_REDIS_URL there are none: the private Redis of `run` ends with it. "
    "Either run without --detach (it runs everything and stops when done), or start a Redis "
    "of your own that stays, on a port nobody else uses (6379, the usual one, may be "
    "another user's or another project's), then in three terminals:\n"
    "  redis-server --port PORT --bind 127.0.0.1 --daemonize yes   # PORT: a free one\n"
    "  export EVALRELAY_REDIS_URL=redis://127.0.0.1:PORT/0\n"
    "  evalrelay worker\n"
    "  evalrelay collect\n"
    "  evalrelay run FILES --detach"
)


def write_report_beside(console: Console, results: Path) -> None:
    """The HTML report beside the complete results; one that cannot be written is only
    logged, as the collector does: the results stand."""
    try:
        console.print(f"report: {ensure_html_beside(results)}")
    except Exception:
        log.exception("could not write the report of %s", results)


def estimate_table(found: dict[str, TargetEstimate]) -> Table:
    table = Table(title="estimate (nothing sent)")
    for column in ("target", "jobs", "input tokens", "output tokens", "dollars"):
        table.add_column(column, justify="left" if column == "target" else "right")
    for name, one in found.items():
        table.add_row(
            name, str(one.jobs), str(one.input_tokens), str(one.output_tokens), estimated_usd(one)
        )
    return table


def estimated_usd(one: TargetEstimate) -> str:
    """The dollars, or `unpriced` when no job has a price: $0 would read as free."""
    if one.unpriced == one.jobs:
        return "unpriced"
    return f"${one.usd:,.6f}" + (f" + {one.unpriced} jobs unpriced" if one.unpriced else "")


def default_out(files: list[LoadedEvalFile]) -> Path:
    return files[0].project.results_dir


def check_targets_here(files: list[LoadedEvalFile], jobs: list[Job]) -> None:
    """When this machine runs the jobs, a target it cannot use fails now, not once per job."""
    used = {job.target.name for job in jobs}
    for loaded in files:
        targets = Targets.load(loaded.project.root, loaded.path)
        for name in sorted(used & targets.by_name.keys()):
            targets.get(name).settings()

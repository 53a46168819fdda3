"""`evalrelay run`: submit a campaign, show its progress, collect its results, summarise."""

from __future__ import annotations

import contextlib
import sys
from pathlib import Path
from typing import TYPE_CHECKING

import click

from evalrelay.bridge.cli.terminal import TerminalConsole, counted, echo
from evalrelay.bridge.connection import configured_url
from evalrelay.bridge.evalfile.limits import MAX_REPEATS
from evalrelay.bridge.planning.run_request import RunRequest
from evalrelay.bridge.queue.starting import Starting, starting

if TYPE_CHECKING:
    from rich.table import Table

    from evalrelay.bridge.queue.estimate import TargetEstimate


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
    started: contextlib.AbstractContextManager[Starting | None]
    if detach or estimate:
        started = contextlib.nullcontext()
    else:  # its Redis and worker start while what runs the campaign is imported
        started = starting(worker=True, force_local_worker=local_worker, concurrency=concurrency)
    with started as ahead:
        _run(
            RunRequest(
                paths=list(paths),
                targets=[n.strip() for o in target_options for n in o.split(",") if n.strip()],
                cases=list(case_patterns),
                tags=list(tags),
                name=name,
                repeats=repeats,
                out=out,
                local_worker=local_worker,
                cache_ttl_seconds=cache_ttl if cache else None,
                concurrency=concurrency,
                budget_usd=budget_usd,
            ),
            ahead,
            detach=detach,
            estimate=estimate,
            min_score=min_score,
        )


def _run(
    request: RunRequest,
    started: Starting | None,
    *,
    detach: bool,
    estimate: bool,
    min_score: float | None,
) -> None:
    # Imported here, after `starting`: these are most of the command's start-up.
    from evalrelay.bridge.cli.follow import ProgressBar
    from evalrelay.bridge.cli.outcome import exit_status, print_summary
    from evalrelay.bridge.results.paid import paid_again_text
    from evalrelay.bridge.running import (
        plan_run,
        running,
        submit_detached,
        write_promptfoo_results,
        write_reports,
    )

    planned = plan_run(request)
    if estimate:
        from evalrelay.bridge.queue.estimate import estimate as estimate_jobs  # its price database

        TerminalConsole().print(estimate_table(estimate_jobs(planned.jobs)))
        return
    if detach:
        echo(submit_detached(planned))
        return
    console = TerminalConsole(stderr=True)
    console.print(f"campaign {planned.campaign_id}: {counted(len(planned.jobs), 'job')}")
    try:
        watch = lambda info: ProgressBar(console, info, info.total)  # noqa: E731
        with running(planned, watch, started) as finished:
            print_summary(console, finished.info, finished.summary)
            if finished.paid_again:
                console.print(paid_again_text(finished.paid_again))
            for report in write_reports(finished):
                console.print(f"report: {report}")
            for written in write_promptfoo_results(finished, planned.files):
                console.print(f"promptfoo results: {written}")
    except KeyboardInterrupt:
        console.print(
            f"cancelled; finished results are in {planned.out_dir}. "
            f"Continue with `evalrelay resume {planned.campaign_id}`."
        )
        sys.exit(130)
    code, why = exit_status(finished.summary, min_score)
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


def estimate_table(found: dict[str, TargetEstimate]) -> Table:
    from rich.table import Table

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

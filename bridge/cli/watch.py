"""`evalrelay watch`: a drop folder; every complete eval file saved in it runs once."""

from __future__ import annotations

import signal
import threading
from pathlib import Path
from types import FrameType

import click

from evalrelay.bridge.cli.terminal import counted, echo
from evalrelay.bridge.inbox.settle import SETTLE_SECONDS, Settler
from evalrelay.bridge.inbox.trust import DEFAULT_BUDGET_USD, DEFAULT_MAX_JOBS, InboxTrust
from evalrelay.bridge.inbox.watcher import InboxEvent, Watcher
from evalrelay.bridge.queue.runtime import open_runtime


@click.command("watch")
@click.argument("inbox", type=click.Path(file_okay=False, path_type=Path))
@click.option("--target", help="Target for files that name none (a subfolder may name one).")
@click.option(
    "--out",
    type=click.Path(file_okay=False, path_type=Path),
    help="Results folder (default: INBOX/../results).",
)
@click.option(
    "--rerun", is_flag=True, help="Run a file again when the same content is dropped again."
)
@click.option(
    "--polling",
    is_flag=True,
    help="Poll instead of using kernel events (network shares, container mounts).",
)
@click.option(
    "--allow-code",
    is_flag=True,
    help="Let dropped files name code: script evaluators, answer transforms, workspace "
    "commands, test generators, prompt functions (run with a clean environment). Only when "
    "everyone who can write to the inbox is trusted.",
)
@click.option(
    "--max-jobs-per-file",
    type=click.IntRange(min=1),
    default=DEFAULT_MAX_JOBS,
    show_default=True,
    help="Jobs one dropped file may make (cases times repeats times targets); a file over "
    "it goes to failed/.",
)
@click.option(
    "--budget-per-file",
    "budget_per_file",
    default=str(DEFAULT_BUDGET_USD),
    show_default=True,
    metavar="USD|none",
    callback=lambda _ctx, _param, value: dollars_or_none(value),
    help="Dollars each dropped file's campaign may spend (answers and judges, for targets "
    "with prices); reaching it pauses the campaign (`evalrelay unpause CAMPAIGN --budget "
    "USD` raises it). `none`: no budget.",
)
@click.option(
    "--trust-inbox-config",
    is_flag=True,
    help="Read evalrelay.yaml and targets files inside the inbox too (by default only the "
    "operator's, outside it): droppers may then define targets, including commands and "
    "servers that receive the workers' keys.",
)
@click.option("--name", help="Watcher name shown by `evalrelay status`.")
@click.option(
    "--settle",
    type=click.FloatRange(min=0.1),
    default=SETTLE_SECONDS,
    show_default=True,
    help="Seconds a file must go unchanged before it is taken; raise it for writers that "
    "pause (or have them write to NAME.part and rename).",
)
@click.option(
    "--concurrency",
    type=click.IntRange(min=1),
    default=16,
    show_default=True,
    help="Jobs at once in the in-process worker (embedded default only).",
)
def watch_command(
    inbox: Path,
    target: str | None,
    out: Path | None,
    rerun: bool,
    polling: bool,
    allow_code: bool,
    trust_inbox_config: bool,
    max_jobs_per_file: int,
    budget_per_file: float | None,
    name: str | None,
    settle: float,
    concurrency: int,
) -> None:
    """Turn eval files dropped into INBOX into campaigns, until stopped.

    Files move to INBOX/queued/, then INBOX/done/; invalid ones to INBOX/failed/ beside
    NAME.error.txt. Nothing dropped is ever deleted. A line on stdout says which campaign
    each file became, and another when its results are complete. Should Redis lose its
    data, each campaign whose file is in INBOX/queued/ is rebuilt from that file.
    """
    inbox.mkdir(parents=True, exist_ok=True)
    stop = threading.Event()

    def on_signal(signum: int, frame: FrameType | None) -> None:
        stop.set()

    signal.signal(signal.SIGTERM, on_signal)
    signal.signal(signal.SIGINT, on_signal)
    with open_runtime(worker=True, concurrency=concurrency) as runtime:
        watcher = Watcher(
            runtime.client,
            runtime.queue,
            inbox,
            out or inbox.resolve().parent / "results",
            default_target=target,
            rerun=rerun,
            trust=InboxTrust(
                allow_code=allow_code,
                inbox_config=trust_inbox_config,
                max_jobs=max_jobs_per_file,
                budget_usd=budget_per_file,
            ),
            polling=polling,
            name=name,
            settler=Settler(settle),
            on_event=print_event,
        )
        echo(f"watching {watcher.inbox.root} (Ctrl-C to stop)", err=True)
        watcher.run(stop)


def print_event(event: InboxEvent) -> None:
    """One line per file taken in and per campaign complete: what a user dropping a file
    waits to see, with the id to give `status`, `report` or `retry`."""
    if event.kind == "queued":
        jobs = counted(event.jobs or 0, "job")
        text = f"{event.file}: campaign {event.campaign_id}, {jobs} queued"
    elif event.kind == "done":
        counts = ", ".join(f"{k} {v}" for k, v in sorted(event.counts.items()))
        results = counted(event.jobs or 0, "result")
        passed = f"{event.passed} of {event.graded} graded passed; " if event.graded else ""
        text = (
            f"{event.file}: campaign {event.campaign_id} complete, {results} "
            f"({passed}{counts}) in {event.results}"
        )
    elif event.kind == "invalid":
        why = "\n  ".join((event.why or "").splitlines())
        text = f"{event.file}: not run, moved to failed/ (its .error.txt says the same):\n  {why}"
    elif event.kind == "rebuilt":
        text = (
            f"{event.file}: campaign {event.campaign_id} rebuilt after Redis lost its data, "
            f"{counted(event.kept or 0, 'result')} kept, {counted(event.jobs or 0, 'job')} "
            "queued again"
        )
    else:
        text = (
            f"{event.file}: same content as campaign {event.campaign_id}, not run again "
            "(moved to done/; --rerun runs it again)"
        )
    echo(text)


def dollars_or_none(value: str) -> float | None:
    """`--budget-per-file`: a positive number of dollars, or `none`."""
    if value.strip().lower() == "none":
        return None
    try:
        usd = float(value)
    except ValueError:
        usd = 0.0
    if not usd > 0:
        raise click.BadParameter(f"{value!r} is not a positive number of dollars, nor `none`")
    return usd

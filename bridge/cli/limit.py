"""`evalrelay limit`: change a target's rate limits while its campaigns run."""

from __future__ import annotations

import click

from evalrelay.bridge.cli.terminal import TerminalConsole
from evalrelay.bridge.errors import EvalrelayError
from evalrelay.bridge.queue.runtime import open_runtime
from evalrelay.bridge.queue.steering import who
from evalrelay.bridge.targets.live_limits import (
    REFRESH_SECONDS,
    LiveLimits,
    clear_limits,
    set_limits,
)


@click.command("limit")
@click.argument("target")
@click.option("--rpm", type=click.IntRange(min=1), help="Requests per minute, for all workers.")
@click.option("--tpm", type=click.IntRange(min=1), help="Tokens per minute, for all workers.")
@click.option("--concurrency", type=click.IntRange(min=1), help="Calls at once, for all workers.")
@click.option("--clear", is_flag=True, help="Back to the limits of the targets file.")
def limit_command(
    target: str, rpm: int | None, tpm: int | None, concurrency: int | None, clear: bool
) -> None:
    """Change TARGET's limits for every worker, within a second, without a restart.

    Each option given replaces that limit of the targets file (`rpm`, `tpm`,
    `max_concurrency`) until `--clear`; `evalrelay status` lists the changes.
    """
    console = TerminalConsole(stderr=True)
    if clear == any(v is not None for v in (rpm, tpm, concurrency)):
        raise EvalrelayError("give --rpm, --tpm or --concurrency, or else --clear")
    with open_runtime(worker=False) as runtime:
        if clear:
            clear_limits(runtime.client, target, who())
            console.print(f"target {target}: back to its targets file's limits")
            return
        limits = LiveLimits(rpm=rpm, tpm=tpm, max_concurrency=concurrency)
        set_limits(runtime.client, target, limits, who())
        shown = ", ".join(f"{k} {v}" for k, v in limits.model_dump(exclude_none=True).items())
        console.print(f"target {target}: {shown} for every worker within {REFRESH_SECONDS:.0f} s")

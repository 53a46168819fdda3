"""`evalrelay pause`, `unpause` and `cancel`: steer a running campaign from any machine.

Each only writes to Redis and returns: the workers and the collector already running
carry out the change, and whoever follows the campaign (`run`, `collect`) keeps going.
"""

from __future__ import annotations

import click

from bridge.cli.terminal import TerminalConsole, counted
from bridge.errors import EvalrelayError
from bridge.queue.budget import budget_of, set_budget
from bridge.queue.campaigns import resolve_campaign
from bridge.queue.runtime import open_runtime
from bridge.queue.steering import cancel_campaign, pause, paused, unpause, who


@click.command("pause")
@click.argument("campaign")
@click.option("--reason", default="paused by hand", show_default=True, help="Shown by status.")
def pause_command(campaign: str, reason: str) -> None:
    """Stop workers taking CAMPAIGN's jobs; running ones finish. `unpause` continues it.

    CAMPAIGN is an id, the start of one, a name given to `run --name`, or `latest`.
    """
    console = TerminalConsole(stderr=True)
    with open_runtime(worker=False) as runtime:
        campaign = resolve_campaign(runtime.client, campaign)
        if pause(runtime.client, campaign, reason, who()):
            console.print(
                f"campaign [bold]{campaign}[/] paused: workers take none of its jobs now, "
                f"those running finish; `evalrelay unpause {campaign}` continues it"
            )
        else:
            state = paused(runtime.client, campaign)
            why = f" ({state.reason}, by {state.by})" if state else ""
            console.print(f"campaign [bold]{campaign}[/] was paused already{why}")


@click.command("unpause")
@click.argument("campaign")
@click.option(
    "--budget-usd",
    type=click.FloatRange(min=0, min_open=True),
    help="A new budget for the campaign, above what it spent (needed once it spent its own).",
)
def unpause_command(campaign: str, budget_usd: float | None) -> None:
    """Let workers take CAMPAIGN's jobs again, sending again those left while it was paused.

    CAMPAIGN is an id, the start of one, a name given to `run --name`, or `latest`.
    """
    console = TerminalConsole(stderr=True)
    with open_runtime(worker=False) as runtime:
        campaign = resolve_campaign(runtime.client, campaign)
        budget = budget_of(runtime.client, campaign)
        if budget is not None:
            limit = budget_usd if budget_usd is not None else budget.limit_usd
            if limit <= budget.spent_usd:
                raise EvalrelayError(
                    f"campaign {campaign} spent ${budget.spent_usd:g} of its ${budget.limit_usd:g} "
                    f"budget: give a higher one, `evalrelay unpause {campaign} --budget-usd N`"
                )
            if budget_usd is not None:
                set_budget(runtime.client, campaign, budget_usd, who())
        elif budget_usd is not None:
            set_budget(runtime.client, campaign, budget_usd, who())
        again = unpause(runtime.client, campaign, who())
        runtime.queue.send(again)
        console.print(
            f"campaign [bold]{campaign}[/] goes on: {counted(len(again), 'job')} sent again"
        )


@click.command("cancel")
@click.argument("campaign")
def cancel_command(campaign: str) -> None:
    """Stop CAMPAIGN for good: workers skip its jobs; running ones finish.

    CAMPAIGN is an id, the start of one, a name given to `run --name`, or `latest`.
    `resume` or `unpause` sends the skipped jobs after all.
    """
    console = TerminalConsole(stderr=True)
    with open_runtime(worker=False) as runtime:
        campaign = resolve_campaign(runtime.client, campaign)
        cancel_campaign(runtime.client, campaign, who())
        console.print(
            f"campaign [bold]{campaign}[/] cancelled: workers skip its jobs; "
            f"`evalrelay resume {campaign}` sends them after all"
        )

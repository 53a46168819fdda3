"""`evalrelay pause`, `unpause` and `cancel`: steer a running campaign from any machine.

Each only writes to Redis and returns: the workers and the collector already running
carry out the change, and whoever follows the campaign (`run`, `collect`) keeps going.
"""

from __future__ import annotations

import click

from evalrelay.bridge.cli.terminal import TerminalConsole, counted
from evalrelay.bridge.errors import EvalrelayError
from evalrelay.bridge.queue.budget import BUDGET_REASON, budget_of, set_budget
from evalrelay.bridge.queue.campaigns import resolve_campaign
from evalrelay.bridge.queue.runtime import open_runtime
from evalrelay.bridge.queue.steering import (
    cancel_campaign,
    pause,
    paused,
    refuse_finished,
    unpause,
    who,
)


@click.command("pause")
@click.argument("campaign")
@click.option("--reason", default="paused by hand", show_default=True, help="Shown by status.")
def pause_command(campaign: str, reason: str) -> None:
    """Stop CAMPAIGN's calls: none starts once this returns; calls under way finish.
    `unpause` continues it.

    CAMPAIGN is an id, the start of one, a name given to `run --name`, or `latest`.
    """
    console = TerminalConsole(stderr=True)
    with open_runtime(worker=False) as runtime:
        campaign = resolve_campaign(runtime.client, campaign)
        refuse_finished(runtime.client, campaign, "pause")
        if pause(runtime.client, campaign, reason, who()):
            console.print(
                f"campaign {campaign} paused: no call of its jobs starts now, those under "
                f"way finish; `evalrelay unpause {campaign}` continues it",
                markup=False,
            )
        else:
            state = paused(runtime.client, campaign)
            why = f" ({state.reason}, by {state.by})" if state else ""
            console.print(f"campaign {campaign} was paused already{why}", markup=False)


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
        refuse_finished(runtime.client, campaign, "unpause")
        budget = budget_of(runtime.client, campaign)
        if budget is not None:
            limit = budget_usd if budget_usd is not None else budget.limit_usd
            held = paused(runtime.client, campaign)
            reached = held is not None and held.reason == BUDGET_REASON and budget_usd is None
            if limit <= budget.spent_usd or reached:  # reached: the next call would pass it
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
            f"campaign {campaign} goes on: {counted(len(again), 'job')} sent again", markup=False
        )


@click.command("cancel")
@click.argument("campaign")
def cancel_command(campaign: str) -> None:
    """End CAMPAIGN: no call starts once this returns; calls under way finish; every job
    not started gets a `cancelled` line, so `run` and the collector finish.

    CAMPAIGN is an id, the start of one, a name given to `run --name`, or `latest`.
    `retry CAMPAIGN --status cancelled` runs the cancelled jobs after all.
    """
    console = TerminalConsole(stderr=True)
    with open_runtime(worker=False) as runtime:
        campaign = resolve_campaign(runtime.client, campaign)
        refuse_finished(runtime.client, campaign, "cancel")
        runtime.queue.send(cancel_campaign(runtime.client, campaign, who()))
        console.print(
            f"campaign {campaign} cancelled: no call of its jobs starts now; each job not "
            f"started gets a `cancelled` line; `evalrelay retry {campaign} --status "
            "cancelled` runs them after all",
            markup=False,
        )

"""`evalrelay collect`: the collector service for campaigns no `run` is following."""

from __future__ import annotations

import signal
import time
from pathlib import Path
from types import FrameType

import click

from evalrelay.bridge.cli.terminal import counted, echo
from evalrelay.bridge.collect_service import collect_campaigns
from evalrelay.bridge.queue.campaigns import resolve_campaign
from evalrelay.bridge.queue.runtime import open_runtime


@click.command("collect")
@click.option(
    "--out",
    type=click.Path(file_okay=False, path_type=Path),
    help="Write results here (default: each campaign's own results folder).",
)
@click.option(
    "--campaign",
    "campaign_ids",
    multiple=True,
    help="Collect only this campaign (repeatable; an id, its start, a `run --name`, or "
    "`latest`); default: every service campaign.",
)
@click.option(
    "--name",
    help="Consumer name; a restarted collector with the same name "
    "resumes its own unacknowledged entries at once.",
)
@click.option(
    "--inbox-campaigns",
    is_flag=True,
    help="Also collect campaigns dropped in an inbox, into the results folder their watcher "
    "chose (which this host must share): their results are written while the watcher is down.",
)
def collect_command(
    out: Path | None, campaign_ids: tuple[str, ...], name: str | None, inbox_campaigns: bool
) -> None:
    """Write results from Redis into <out>/<campaign>.jsonl: every service campaign until
    stopped, or, with --campaign, the campaigns named until each is complete."""
    stopping = False

    def stop(signum: int, frame: FrameType | None) -> None:
        nonlocal stopping
        stopping = True

    signal.signal(signal.SIGTERM, stop)
    view = ProgressLines()
    with open_runtime(worker=False) as runtime:
        collect_campaigns(
            runtime,
            view,
            lambda: stopping,
            out=out,
            campaign_ids=[resolve_campaign(runtime.client, c) for c in campaign_ids],
            consumer=name,
            inbox_campaigns=inbox_campaigns,
        )


class ProgressLines:
    """A line per campaign whenever its count moved, at most every `PROGRESS_SECONDS`:
    a collector runs for days in a log, where a bar would be noise."""

    def __init__(self) -> None:
        self.said: dict[str, tuple[int, float]] = {}

    def progress(self, campaign_id: str, done: int, total: int) -> None:
        last_done, last_at = self.said.get(campaign_id, (0, 0.0))
        now = time.monotonic()
        if done != last_done and now - last_at >= PROGRESS_SECONDS:
            echo(f"campaign {campaign_id}: {done}/{counted(total, 'result')}")
            self.said[campaign_id] = (done, now)

    def complete(self, campaign_id: str, done: int, results: Path) -> None:
        echo(f"campaign {campaign_id} complete: {counted(done, 'result')} in {results}")


PROGRESS_SECONDS = 10.0

"""`evalrelay collect`: the collector service for campaigns no `run` is following."""

from __future__ import annotations

import logging
import signal
import socket
import time
from pathlib import Path
from types import FrameType

import click

from bridge.cli.terminal import counted, echo
from bridge.queue.campaigns import (
    CampaignInfo,
    list_campaigns,
    load_info,
    progress,
    resolve_campaign,
)
from bridge.queue.connection import RideOut
from bridge.queue.rebuild import current_epoch, write_record
from bridge.queue.runtime import open_runtime
from bridge.reports.writer import ensure_html_beside
from bridge.results.collector import Collector
from bridge.results.results_file import results_path

log = logging.getLogger(__name__)


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
def collect_command(out: Path | None, campaign_ids: tuple[str, ...], name: str | None) -> None:
    """Write results from Redis into <out>/<campaign>.jsonl: every service campaign until
    stopped, or, with --campaign, the campaigns named until each is complete."""
    stopping = False

    def stop(signum: int, frame: FrameType | None) -> None:
        nonlocal stopping
        stopping = True

    signal.signal(signal.SIGTERM, stop)
    with open_runtime(worker=False) as runtime:
        campaign_ids = tuple(resolve_campaign(runtime.client, c) for c in campaign_ids)
        infos: dict[str, CampaignInfo] = {}
        finished: set[str] = set()

        recorded: set[str] = set()
        epoch_seen: str | None = None  # this Redis's mark when last looked

        def out_dir_for(campaign_id: str) -> Path:
            """Where the campaign's results go; its record (`bridge.queue.rebuild`) is kept
            there first, so `resume` can rebuild it should Redis lose it."""
            folder = out or Path(infos[campaign_id].out_dir)
            if campaign_id not in recorded:
                write_record(infos[campaign_id].model_copy(update={"out_dir": str(folder)}))
                recorded.add(campaign_id)
            return folder

        collector = Collector(
            runtime.client,
            name or f"collect@{socket.gethostname()}",
            out_dir_for,
            lambda c: infos[c].total,
            ensure_html_beside,
        )
        ride_out = RideOut(lambda text: log.warning("collect: %s", text))
        shown = ProgressLines()

        def one_round() -> None:
            nonlocal epoch_seen
            if stopping:
                raise KeyboardInterrupt
            found = (
                [load_info(runtime.client, c) for c in campaign_ids]
                if campaign_ids
                else [
                    i
                    for i in list_campaigns(runtime.client, limit=1000)
                    if i.collector == "service"
                ]
            )
            epoch = current_epoch(runtime.client)
            if epoch_seen not in (None, epoch) and infos:
                lost = ", ".join(sorted(set(infos) - finished)) or "none unfinished"
                log.error(
                    "collect: Redis lost its data (it restarted empty, or evicted keys): the "
                    "campaigns it was collecting are gone from it (%s); on this host, "
                    "`evalrelay resume <results file>` rebuilds each and collects the rest",
                    lost,
                )
            epoch_seen = epoch
            infos.update((i.campaign_id, i) for i in found)
            active = [i.campaign_id for i in found if i.campaign_id not in finished]
            collector.poll(active, block_ms=1000)
            for campaign_id in active:
                state = progress(runtime.client, campaign_id)
                shown.report(campaign_id, state.done, state.total)
                if state.finished:
                    collector.finish(campaign_id)
                    finished.add(campaign_id)
                    where = results_path(out_dir_for(campaign_id), campaign_id)
                    results = counted(state.done, "result")
                    echo(f"campaign {campaign_id} complete: {results} in {where}")

        try:
            while not stopping and not (campaign_ids and finished.issuperset(campaign_ids)):
                ride_out(one_round)
        except KeyboardInterrupt:
            pass
        finally:
            collector.close()


class ProgressLines:
    """A line per campaign whenever its count moved, at most every `PROGRESS_SECONDS`:
    a collector runs for days in a log, where a bar would be noise."""

    def __init__(self) -> None:
        self.said: dict[str, tuple[int, float]] = {}

    def report(self, campaign_id: str, done: int, total: int) -> None:
        last_done, last_at = self.said.get(campaign_id, (0, 0.0))
        now = time.monotonic()
        if done != last_done and now - last_at >= PROGRESS_SECONDS:
            echo(f"campaign {campaign_id}: {done}/{counted(total, 'result')}")
            self.said[campaign_id] = (done, now)


PROGRESS_SECONDS = 10.0

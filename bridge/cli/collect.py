"""`evalrelay collect`: the collector service for campaigns no `run` is following."""

from __future__ import annotations

import logging
import signal
import socket
from pathlib import Path
from types import FrameType

import click

from bridge.queue.campaigns import (
    CampaignInfo,
    list_campaigns,
    load_info,
    progress,
    resolve_campaign,
)
from bridge.queue.connection import RideOut
from bridge.queue.runtime import open_runtime
from bridge.reports.writer import ensure_html_beside
from bridge.results.collector import Collector

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
    """Write results from Redis into <out>/<campaign>.jsonl until stopped."""
    stopping = False

    def stop(signum: int, frame: FrameType | None) -> None:
        nonlocal stopping
        stopping = True

    signal.signal(signal.SIGTERM, stop)
    with open_runtime(worker=False) as runtime:
        campaign_ids = tuple(resolve_campaign(runtime.client, c) for c in campaign_ids)
        infos: dict[str, CampaignInfo] = {}
        finished: set[str] = set()

        def out_dir_for(campaign_id: str) -> Path:
            return out or Path(infos[campaign_id].out_dir)

        collector = Collector(
            runtime.client,
            name or f"collect@{socket.gethostname()}",
            out_dir_for,
            lambda c: infos[c].total,
            ensure_html_beside,
        )
        ride_out = RideOut(lambda text: log.warning("collect: %s", text))

        def one_round() -> None:
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
            infos.update((i.campaign_id, i) for i in found)
            active = [i.campaign_id for i in found if i.campaign_id not in finished]
            collector.poll(active, block_ms=1000)
            for campaign_id in active:
                if progress(runtime.client, campaign_id).finished:
                    collector.finish(campaign_id)
                    finished.add(campaign_id)

        try:
            while not stopping:
                ride_out(one_round)
        except KeyboardInterrupt:
            pass
        finally:
            collector.close()

"""`evalrelay status`: campaigns, queue depths, workers and jobs in flight."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from typing import Any

import click
import redis
from rich.console import Console
from rich.table import Table

from bridge.cli.follow import counts_text
from bridge.keys import inflight_key, watchers_key, workers_key
from bridge.queue.campaigns import list_campaigns, load_info, missing_jobs, progress
from bridge.queue.celery_queue import QUEUES
from bridge.queue.holders import ALIVE_SECONDS, forget_gone
from bridge.queue.runtime import open_runtime


@click.command("status")
@click.argument("campaign", required=False)
def status_command(campaign: str | None) -> None:
    """Show campaigns (or one CAMPAIGN in detail), queues, workers and in-flight jobs."""
    console = Console()
    with open_runtime(worker=False) as runtime:
        client = runtime.client
        if campaign:
            console.print(campaign_table(client, [campaign], detail=True))
        else:
            ids = [i.campaign_id for i in list_campaigns(client)]
            console.print(campaign_table(client, ids) if ids else "no campaigns yet")
        console.print(queue_table(client))
        console.print(worker_table(client))
        if client.hlen(watchers_key()):
            console.print(watcher_table(client))


def campaign_table(client: redis.Redis, ids: list[str], detail: bool = False) -> Table:
    table = Table(title="campaigns")
    for column in ("campaign", "created", "targets", "done", "statuses", "results in"):
        table.add_column(column)
    for campaign_id in ids:
        info, state = load_info(client, campaign_id), progress(client, campaign_id)
        done = f"{state.done}/{state.total}"
        if detail:
            done += f" ({len(missing_jobs(client, campaign_id))} without a result)"
        table.add_row(
            campaign_id,
            f"{info.created_at:%Y-%m-%d %H:%M}",
            ", ".join(info.targets),
            done,
            counts_text(state.counts),
            info.out_dir,
        )
    return table


def queue_table(client: redis.Redis) -> Table:
    table = Table(title="queues")
    table.add_column("queue")
    table.add_column("waiting", justify="right")
    for queue in QUEUES:
        table.add_row(queue, str(client.llen(queue)))
    table.add_row("running (leased)", str(client.zcard(inflight_key())))
    return table


def worker_table(client: redis.Redis) -> Table:
    table = Table(title="workers")
    for column in ("worker", "queues", "last seen"):
        table.add_column(column)
    for name, info, seen in heartbeats(client, workers_key()):
        table.add_row(name, ", ".join(info.get("queues", [])), seen)
    return table


def watcher_table(client: redis.Redis) -> Table:
    table = Table(title="watchers")
    for column in ("watcher", "inbox", "last seen", "last scan", "backlog", "submitted"):
        table.add_column(column)
    now = time.time()
    for name, info, seen in heartbeats(client, watchers_key()):
        last_scan = f"{now - float(info.get('last_scan', now)):.0f}s ago"
        table.add_row(
            name,
            info.get("inbox", ""),
            seen,
            last_scan,
            str(info.get("backlog", 0)),
            str(info.get("submitted", 0)),
        )
    return table


def heartbeats(client: redis.Redis, key: str) -> Iterator[tuple[str, dict[str, Any], str]]:
    """Processes that reported lately: name, report, and how long ago. Those silent for
    `GONE_SECONDS` are dropped here too, in case no live worker is left to do it."""
    forget_gone(client, key)
    now = time.time()
    for name, raw in sorted(client.hgetall(key).items()):
        info = json.loads(raw)
        age = now - float(info.get("seen", 0))
        yield str(name), info, f"{age:.0f}s ago" + ("" if age < ALIVE_SECONDS else " (gone?)")

"""`evalrelay status`: campaigns, queue depths, workers and jobs in flight.

By default it shows what a user is working on: unfinished campaigns, the last few finished
ones, and live workers and watchers; it says how many it left out, and `--all` shows them.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator, Sequence
from datetime import UTC, datetime
from itertools import islice
from pathlib import Path
from typing import Any

import click
import redis
from rich.console import Console
from rich.measure import Measurement
from rich.table import Table
from rich.text import Text

from evalrelay.bridge.cli.follow import counts_text
from evalrelay.bridge.cli.terminal import TerminalConsole, counted, printable
from evalrelay.bridge.clock import now_seconds
from evalrelay.bridge.contract.campaign_state import ended_many
from evalrelay.bridge.contract.names import QUEUES
from evalrelay.bridge.delivery.holders import ALIVE_SECONDS, forget_gone
from evalrelay.bridge.evalfile.project import Project
from evalrelay.bridge.keys import (
    collected_key,
    inflight_key,
    watchers_key,
    workers_key,
)
from evalrelay.bridge.queue.budget import Budget, budget_of
from evalrelay.bridge.queue.campaigns import (
    CampaignInfo,
    Progress,
    Rebuilt,
    list_campaigns,
    load_info,
    progress_many,
    resolve_campaign,
)
from evalrelay.bridge.queue.rebuild import lost_campaigns
from evalrelay.bridge.queue.runtime import open_runtime
from evalrelay.bridge.queue.steering import Change, Paused, audit, paused, paused_many
from evalrelay.bridge.results.collected import (
    ResultsHome,
    results_home,
    results_homes,
    where_results_are,
)
from evalrelay.bridge.results.collector import collectors_of
from evalrelay.bridge.results.manifest import listed_ids
from evalrelay.bridge.results.paid import paid_again, paid_again_many, paid_again_text
from evalrelay.bridge.results.write_errors import write_errors
from evalrelay.bridge.targets.live_limits import limit_changes

RECENT_FINISHED = 5
"""Finished campaigns listed by default, newest first, after every unfinished one."""

NO_WIDTH_LIMIT = 100_000

ID_BATCH = 1000
"""Job ids asked about in one round trip to Redis."""


@click.command("status")
@click.argument("campaign", required=False)
@click.option(
    "--all",
    "show_all",
    is_flag=True,
    help="Every campaign Redis still has, and workers and watchers not heard from lately.",
)
@click.option(
    "--last",
    type=click.IntRange(min=0),
    default=RECENT_FINISHED,
    show_default=True,
    help="How many of the newest finished campaigns to list.",
)
def status_command(campaign: str | None, show_all: bool, last: int) -> None:
    """Show campaigns (or one CAMPAIGN in detail), queues, workers and in-flight jobs.

    CAMPAIGN is an id, the start of one, a name given to `run --name`, or `latest`.
    """
    console = TerminalConsole()
    with open_runtime(worker=False) as runtime:
        client = runtime.client
        if campaign:
            info = load_info(client, resolve_campaign(client, campaign))
            # Never wrapped nor cut by rich: a terminal wraps a long line softly, and it
            # copies whole.
            console.print(Text.assemble("campaign ", (info.campaign_id, "bold")), soft_wrap=True)
            console.print(campaign_detail(client, info))
            print_lost_jobs(console, [info])
            print_uncollected(console, client, [info], runtime.embedded)
        else:
            print_campaigns(console, client, show_all, last, runtime.embedded)
        print_write_errors(console, client)
        console.print(queue_table(client))
        if changes := limit_changes(client):
            console.print(limits_table(changes))
        now = now_seconds(client)  # every `seen` was written on Redis's clock
        print_live(console, client, workers_key(), worker_table, show_all, now)
        if client.hlen(watchers_key()):
            print_live(console, client, watchers_key(), watcher_table, show_all, now)


def print_campaigns(
    console: Console, client: redis.Redis, show_all: bool, last: int, embedded: bool
) -> None:
    infos = list_campaigns(client, limit=None)
    print_lost(console, {i.campaign_id for i in infos})
    if not infos:
        console.print("no campaigns yet")
        return
    states = progress_many(client, [i.campaign_id for i in infos])
    shown = infos if show_all else recent(infos, states, last)
    if shown:
        homes = results_homes(client, [i.campaign_id for i in shown])
        ids = [i.campaign_id for i in shown]
        stopped, ended = paused_many(client, ids), ended_many(client, ids)
        paid = paid_again_many(client, ids)
        print_fitted(console, *campaign_tables(shown, states, homes, stopped, ended, paid))
        unfinished = [i for i in shown if not states[i.campaign_id].finished]
        print_lost_jobs(console, unfinished)
        print_uncollected(console, client, unfinished, embedded)
    hidden = len(infos) - len(shown)
    if hidden:
        console.print(f"{hidden} older finished campaigns not shown (--all lists them)")


def recent(
    infos: Sequence[CampaignInfo], states: dict[str, Progress], last: int
) -> list[CampaignInfo]:
    """Every unfinished campaign and the `last` newest finished ones, newest first."""
    finished = [i.campaign_id for i in infos if states[i.campaign_id].finished]
    kept = set(finished[:last])
    return [i for i in infos if not states[i.campaign_id].finished or i.campaign_id in kept]


CAMPAIGN_COLUMNS = ("campaign", "done", "statuses", "created", "targets", "results in")
"""In the order they are kept when the terminal is narrow: the id always, whole."""


def campaign_tables(
    infos: Sequence[CampaignInfo],
    states: dict[str, Progress],
    homes: dict[str, ResultsHome | None],
    stopped: set[str],
    ended: set[str],
    paid: dict[str, dict[str, int]] | None = None,
) -> Iterator[Table]:
    """The campaigns table, then the same with ever fewer columns, for `print_fitted`."""
    for count in range(len(CAMPAIGN_COLUMNS), 1, -1):
        table = Table(title="campaigns")
        for column in CAMPAIGN_COLUMNS[:count]:
            table.add_column(column, no_wrap=column == "campaign")
        for info in infos:
            state = states[info.campaign_id]
            row = (
                info.campaign_id,
                f"{state.done}/{state.total}"
                + (" rebuilt" if info.rebuilt else "")
                + (" cancelled" if info.campaign_id in ended else "")
                + (" paused" if info.campaign_id in stopped - ended else "")
                + paid_again_mark((paid or {}).get(info.campaign_id, {})),
                counts_text(state.counts),
                f"{info.created_at:%Y-%m-%d %H:%M}",
                ", ".join(info.targets),
                where_results_are(homes[info.campaign_id], info.out_dir),
            )
            table.add_row(*row[:count])
        yield table


def paid_again_mark(counts: dict[str, int]) -> str:
    """In the `done` column: the calls paid past one per job (`status CAMPAIGN` says why)."""
    total = sum(counts.values())
    return f" +{total} paid again" if total else ""


def campaign_detail(client: redis.Redis, info: CampaignInfo) -> Table:
    """One campaign, a field a line, so every field fits a narrow terminal."""
    state = progress_many(client, [info.campaign_id])[info.campaign_id]
    table = Table(show_header=False)
    table.add_column("field", style="bold", no_wrap=True)
    table.add_column("value")
    rows: dict[str, str | Text] = {
        "name": info.name or "",
        "created": f"{info.created_at:%Y-%m-%d %H:%M}",
        "targets": ", ".join(info.targets),
        "done": f"{state.done}/{state.total} "
        f"({count_missing(client, info.campaign_id)} without a result)",
        "statuses": counts_text(state.counts),
        "cancelled": "yes" if ended_many(client, [info.campaign_id]) else "",
        "paused": paused_text(paused(client, info.campaign_id)),
        "budget": budget_text(budget_of(client, info.campaign_id)),
        "changes": "\n".join(change_text(c) for c in audit(client, info.campaign_id)),
        "rebuilt": rebuilt_text(info.rebuilt) if info.rebuilt else "",
        "paid again": paid_again_text(paid_again(client, info.campaign_id)),
        "results in": where_results_are(results_home(client, info.campaign_id), info.out_dir),
        "sources": "\n".join(info.sources),
    }
    for field, value in rows.items():
        if value:
            table.add_row(field, value)
    return table


def paused_text(state: Paused | None) -> str:
    if state is None:
        return ""
    since = datetime.fromtimestamp(state.at, UTC)
    return f"yes, since {since:%Y-%m-%d %H:%M:%S} UTC by {state.by}: {state.reason}"


def budget_text(budget: Budget | None) -> str:
    if budget is None:
        return ""
    return f"${budget.spent_usd:.6g} spent of ${budget.limit_usd:.6g}"


def change_text(change: Change) -> str:
    """One line of the campaign's audit, as `status CAMPAIGN` lists them."""
    when = datetime.fromtimestamp(change.at, UTC)
    detail = f": {change.detail}" if change.detail else ""
    return f"{when:%Y-%m-%d %H:%M:%S} UTC {change.action} by {change.by}{detail}"


def print_uncollected(
    console: Console, client: redis.Redis, infos: Sequence[CampaignInfo], embedded: bool
) -> None:
    """A line for each unfinished campaign no collector polls, with the command that
    finishes it: without one its results wait in Redis and `done` never moves."""
    progress = progress_many(client, [i.campaign_id for i in infos])
    unfinished = [i.campaign_id for i in infos if not progress[i.campaign_id].finished]
    for campaign_id, collector in collectors_of(client, unfinished).items():
        if collector is not None:
            continue
        if embedded:
            why = "the run that started it has ended"
            todo = f"`evalrelay resume {campaign_id}` sends its missing jobs and collects it"
        else:
            why = "no collector is writing its results, which wait in Redis"
            todo = (
                f"`evalrelay resume {campaign_id}` sends the jobs that were lost and collects "
                f"it, or start `evalrelay collect --campaign {campaign_id}`"
            )
        console.print(Text(f"{campaign_id}: {why}; {todo}", style="yellow"), soft_wrap=True)


def print_lost_jobs(console: Console, infos: Sequence[CampaignInfo]) -> None:
    """A line for each campaign rebuilt without its jobs (on a host without its eval files),
    with the command that sends them, and where to run it."""
    for info in infos:
        if info.rebuilt is None or not info.rebuilt.needs_eval_files:
            continue
        cwd = info.plan.cwd if info.plan else None
        text = (
            f"{info.campaign_id}: lost with Redis's data; its record and "
            f"{counted(info.rebuilt.kept, 'result')} were made known again by "
            f"{info.rebuilt.by}, its jobs were not: `evalrelay resume {info.campaign_id}` in "
            f"{cwd or 'the folder it was run from'}, on the host that has its eval files "
            f"({', '.join(info.sources)}), sends the jobs without a line"
        )
        console.print(Text(text, style="red"), soft_wrap=True)


def rebuilt_text(rebuilt: Rebuilt) -> str:
    """A campaign Redis lost and someone rebuilt: when, by whom, and what it kept."""
    return (
        f"{rebuilt.at:%Y-%m-%d %H:%M} by {rebuilt.by}, after Redis lost its data: "
        f"{counted(rebuilt.kept, 'result')} kept, {counted(rebuilt.sent, 'job')} sent again"
    )


def count_missing(client: redis.Redis, campaign_id: str) -> int:
    """The campaign's jobs with no result yet, counted by id in Redis: reading every job
    back, as `resume` must to send them again, takes seconds at 100,000 jobs."""
    ids = listed_ids(client, campaign_id)
    missing = 0
    while batch := list(islice(ids, ID_BATCH)):
        collected = client.smismember(collected_key(campaign_id), batch)
        missing += sum(not member for member in collected)
    return missing


def print_write_errors(console: Console, client: redis.Redis) -> None:
    """A line for each collector the disk refuses: its results wait in Redis, and nothing
    else shows that no file grows."""
    for error in write_errors(client):
        console.print(Text(printable(str(error)), style="bold red"), soft_wrap=True)


def print_fitted(console: Console, *tables: Table) -> None:
    """Print the first table that fits the terminal, else the last one wider than it:
    ids are never cut or folded, so they can be copied from the screen."""
    needed = 0
    for table in tables:
        unlimited = console.options.update_width(NO_WIDTH_LIMIT)
        needed = Measurement.get(console, unlimited, table).minimum
        if needed <= console.width:
            console.print(table)
            return
    width = console.width
    console.width = needed  # the terminal wraps the long lines; the text stays whole
    try:
        console.print(table, crop=False)
    finally:
        console.width = width


def queue_table(client: redis.Redis) -> Table:
    table = Table(title="queues")
    table.add_column("queue")
    table.add_column("waiting", justify="right")
    for queue in QUEUES:
        table.add_row(queue, str(client.llen(queue)))
    table.add_row("running (leased)", str(client.zcard(inflight_key())))
    return table


def limits_table(changes: Sequence[dict[str, str]]) -> Table:
    """The last live changes of targets' limits (`evalrelay limit`), oldest first."""
    table = Table(title="limit changes")
    for column in ("when", "target", "change", "by"):
        table.add_column(column)
    for change in changes:
        when = datetime.fromtimestamp(float(change["at"]), UTC)
        row = (f"{when:%Y-%m-%d %H:%M:%S}", change["target"], change["change"], change["by"])
        table.add_row(*row)
    return table


Beat = tuple[str, dict[str, Any], float]
"""A process's name, its last report, and the seconds since."""


def print_live(
    console: Console,
    client: redis.Redis,
    key: str,
    table_of: Callable[[Sequence[Beat]], Table],
    show_all: bool,
    now: float,
) -> None:
    """Workers (or watchers) that reported lately; the silent ones only with `--all`: a
    worker that stopped a minute ago serves no queue. `now` is Redis's time."""
    beats = list(heartbeats(client, key, now))
    shown = [beat for beat in beats if show_all or beat[2] < ALIVE_SECONDS]
    table = table_of(shown)
    console.print(table)
    silent = len(beats) - len(shown)
    if silent:
        console.print(
            f"{silent} {table.title} not heard from in {ALIVE_SECONDS:.0f}s not shown "
            "(--all lists them)"
        )


def worker_table(beats: Sequence[Beat]) -> Table:
    table = Table(title="workers")
    for column in ("worker", "queues", "last seen"):
        table.add_column(column)
    for name, info, age in beats:
        table.add_row(name, ", ".join(info.get("queues", [])), seen_text(age))
    return table


def watcher_table(beats: Sequence[Beat]) -> Table:
    table = Table(title="watchers")
    for column in ("watcher", "inbox", "last seen", "last scan", "backlog", "submitted"):
        table.add_column(column)
    for name, info, age in beats:
        last_scan = f"{age + float(info.get('scan_age', 0)):.0f}s ago"
        table.add_row(
            name,
            info.get("inbox", ""),
            seen_text(age),
            last_scan,
            str(info.get("backlog", 0)),
            str(info.get("submitted", 0)),
        )
    return table


def seen_text(age: float) -> str:
    return f"{age:.0f}s ago" + ("" if age < ALIVE_SECONDS else " (gone?)")


def heartbeats(client: redis.Redis, key: str, now: float) -> Iterator[Beat]:
    """Processes that reported lately, by name, each with its age at `now` (Redis's time,
    like `seen`: a host's skewed clock never shows). Those silent for `GONE_SECONDS` are
    dropped here too, in case no live worker is left to do it."""
    forget_gone(client, key)
    for name, raw in sorted(client.hgetall(key).items()):
        info = json.loads(raw)
        yield str(name), info, max(0.0, now - float(info.get("seen", 0)))


def print_lost(console: Console, known: set[str]) -> None:
    """Campaigns whose results folder here keeps them but this Redis does not: it lost its
    data. Each is named with the command that rebuilds it."""
    for lost in lost_campaigns(Project.containing(Path.cwd()).results_dir, known):
        console.print(str(lost), style="red")

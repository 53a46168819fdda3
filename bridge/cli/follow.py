"""Following a campaign to its end, as a live progress bar (the following itself:
`bridge.queue.following`)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path

import redis
from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, ProgressColumn, Task, TimeElapsedColumn
from rich.progress import Progress as Bar
from rich.text import Text

from evalrelay.bridge.cli.terminal import counted
from evalrelay.bridge.queue.budget import BUDGET_REASON
from evalrelay.bridge.queue.campaigns import CampaignInfo, Progress
from evalrelay.bridge.queue.following import (
    LOST,
    NO_WORKER_WARNING_SECONDS,
    Unserved,
)
from evalrelay.bridge.queue.following import (
    follow_campaign as follow,
)
from evalrelay.bridge.queue.steering import Paused
from evalrelay.bridge.reports.writer import ensure_html_beside
from evalrelay.bridge.results.results_file import results_path
from evalrelay.bridge.results.summary import CampaignSummary

STATUS_STYLES = {"ok": "green", "model_failure": "yellow", "timeout": "magenta"}


def follow_campaign(
    client: redis.Redis,
    info: CampaignInfo,
    console: Console,
    consumer: str | None = None,
    sent: Sequence[str] | None = None,
    rebuild: Callable[[set[str]], Sequence[object] | None] | None = None,
    collect: bool = True,
    on_complete: Callable[[Path], object] = ensure_html_beside,
) -> CampaignSummary:
    """Follow the campaign (`bridge.queue.following.follow_campaign`, whose arguments these
    are) under a progress bar on `console`; by default the HTML report is written beside
    the results file once it is complete."""
    with ProgressBar(console, info, len(sent) if sent is not None else info.total) as bar:
        return follow(
            client,
            info,
            bar,
            on_complete,
            consumer=consumer,
            sent=sent,
            rebuild=rebuild,
            collect=collect,
        )


class ProgressBar:
    """What a command shows of a campaign it follows: a bar of its jobs, their statuses and
    rate, the campaign's pause, and what happened to it on the way."""

    def __init__(self, console: Console, info: CampaignInfo, total: int) -> None:
        self.console = console
        self.info = info
        self.running = Text("jobs", style="bold")
        self.bar = Bar(
            FieldColumn("label"),
            BarColumn(),
            MofNCompleteColumn(),
            FieldColumn("counts"),
            FieldColumn("rate"),
            TimeElapsedColumn(),
            console=console,
            transient=False,
        )
        self.task = self.bar.add_task(
            "jobs", total=total, label=self.running, counts=Text(), rate=""
        )

    def __enter__(self) -> ProgressBar:
        self.bar.__enter__()
        return self

    def __exit__(self, *exc: object) -> None:
        self.bar.__exit__(None, None, None)

    def outage(self, text: str) -> None:
        self.console.print(text, style="yellow")

    def round(self, state: Progress, rate: float, held: Paused | None) -> None:
        self.bar.update(
            self.task,
            label=Text(f"paused: {held.reason}", style="red") if held else self.running,
            completed=state.done,
            total=state.total,
            counts=counts_text(state.counts),
            rate=f"{rate:.1f}/s",
        )

    def pause_changed(self, held: Paused | None) -> None:
        self.console.print(pause_line(self.info.campaign_id, held))

    def rebuilt(self, kept: int, sent: Sequence[object] | None) -> None:
        self.console.print(lost_and_rebuilt(self.info, kept, sent), style="red")

    def unserved(self, missing: Unserved) -> None:
        self.console.print(unserved_text(missing), style="yellow")


class FieldColumn(ProgressColumn):
    """A task's field shown as the text it is: a pause's reason is never read as markup."""

    def __init__(self, field: str) -> None:
        super().__init__()
        self.field = field

    def render(self, task: Task) -> Text:
        value = task.fields.get(self.field, "")
        return value if isinstance(value, Text) else Text(str(value))


def pause_line(campaign_id: str, held: Paused | None) -> Text:
    """What the progress says when the campaign it follows is paused, or goes on again."""
    if held is None:
        return Text(f"campaign {campaign_id} goes on", style="green")
    if held.reason == BUDGET_REASON:
        return Text(
            f"campaign {campaign_id} is paused: {BUDGET_REASON}. `evalrelay unpause "
            f"{campaign_id} --budget-usd N` lets it go on with a higher budget",
            style="red",
        )
    return Text(
        f"campaign {campaign_id} is paused ({held.reason}, by {held.by}): "
        f"`evalrelay unpause {campaign_id}` lets it go on",
        style="yellow",
    )


def lost_and_rebuilt(info: CampaignInfo, kept: int, sent: Sequence[object] | None) -> str:
    """`sent`: the jobs sent again, or None when another process had rebuilt it already."""
    file = results_path(Path(info.out_dir), info.campaign_id)
    if sent is None:
        return f"{LOST}: campaign {info.campaign_id} was gone from it; another process rebuilt it"
    return (
        f"{LOST}: campaign {info.campaign_id} was gone from it; rebuilt from its eval files "
        f"and {file}: {counted(kept, 'result')} kept, {counted(len(sent), 'job')} sent again"
    )


def unserved_text(missing: Unserved) -> str:
    """What to do when no live worker serves some of a campaign's queues."""
    who = (
        f"no live worker serves the queue {missing.queues}"
        if missing.any_alive
        else f"no worker has reported in the last {NO_WORKER_WARNING_SECONDS:.0f} s"
    )
    return (
        f"{who}; start one with `evalrelay worker --queues {missing.queues}`, or run "
        "with --local-worker. Waiting."
    )


def counts_text(counts: dict[str, int]) -> Text:
    """`ok 3 timeout 1`, each status in its colour."""
    return Text(" ").join(
        Text(f"{k} {v}", style=STATUS_STYLES.get(k, "red")) for k, v in sorted(counts.items())
    )

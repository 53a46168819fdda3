"""Following a campaign to its end: collecting its results when this process is its
collector, rebuilding it when Redis comes back without it, noting when it is paused or
goes on, and finding when no live worker serves it. What a person sees of it is the
command's (`Watcher`): this module decides, the command prints.

It lives in `queue`, not `results`: it reads a campaign's progress and pause mark, which
are the queue's, and drives the results' collector, which knows nothing of campaigns or
their queues (layers: docs/architecture.md)."""

from __future__ import annotations

import functools
import json
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

import redis

from evalrelay.bridge.clock import now_seconds
from evalrelay.bridge.connection import RideOut
from evalrelay.bridge.errors import EvalrelayError
from evalrelay.bridge.keys import workers_key
from evalrelay.bridge.queue.campaigns import CampaignInfo, Progress, progress, round_progress
from evalrelay.bridge.queue.steering import Paused, paused
from evalrelay.bridge.results.collected import file_here
from evalrelay.bridge.results.collector import Collector
from evalrelay.bridge.results.results_file import read_results, results_path
from evalrelay.bridge.results.statistics import import_in_background
from evalrelay.bridge.results.summary import CampaignSummary

NO_WORKER_WARNING_SECONDS = 30.0

MIN_POLL_SECONDS = 0.05
PAUSE_CHECK_SECONDS = 1.0
"""How often the bar asks whether the campaign is paused: one more GET, not every round."""

STATISTICS_LEAD_SECONDS = 1.0
SMALL_CAMPAIGN = 200

LOST = "Redis lost its data (it restarted empty, or evicted keys; run it with appendonly yes)"


@dataclass(frozen=True)
class Unserved:
    """No live worker serves some of a campaign's queues."""

    queues: str
    """The queues nobody serves, comma-separated (all of the campaign's when no worker is
    alive; `api` for a campaign that names none)."""
    any_alive: bool
    """Some worker reported lately, only not on these queues."""


class Watcher(Protocol):
    """What the command following a campaign shows of it."""

    def outage(self, text: str) -> None:
        """Redis is out of reach, or answers again."""

    def round(self, state: Progress, rate: float, held: Paused | None) -> None:
        """Where the campaign is after a round: its progress, results a second, its pause."""

    def pause_changed(self, held: Paused | None) -> None:
        """The campaign was paused (`held`), or goes on again (None)."""

    def rebuilt(self, kept: int, sent: Sequence[object] | None) -> None:
        """Redis lost the campaign and it was rebuilt: `kept` results, `sent` the jobs sent
        again (None when another process had rebuilt it already)."""

    def unserved(self, missing: Unserved) -> None:
        """No live worker serves some of its queues: a cluster run would just wait."""


def statistics_due(done: int, total: int, rate: float) -> bool:
    """Whether to start importing the summary's statistics libraries (scipy, statsmodels:
    a second of CPU, holding the GIL): at once for a small campaign, else when the jobs left
    would take less than `STATISTICS_LEAD_SECONDS` at the rate seen so far. Imported at the
    start, they took the CPU that the workers on this machine and this process's collector
    needed: with a worker on the same two cores, a run of 3,000 calls made 0.81 of a bare
    loop's rate, and 0.91 importing them in its last second (`bench/api.py --user`)."""
    if total <= SMALL_CAMPAIGN:
        return True
    return rate > 0 and (total - done) / rate <= STATISTICS_LEAD_SECONDS


def graded_so_far(collector: Collector | None, campaign_id: str) -> bool:
    """Whether the summary will have statistics to compute: a result this command collected
    was graded (a campaign of cases without evaluators never needs the libraries), or
    another process collects it and this one cannot tell yet."""
    if collector is None:
        return True
    file = collector.files.get(campaign_id)
    return file is not None and file.summary.scored > 0


def follow_campaign(
    client: redis.Redis,
    info: CampaignInfo,
    watcher: Watcher,
    on_complete: Callable[[Path], object],
    consumer: str | None = None,
    sent: Sequence[str] | None = None,
    rebuild: Callable[[set[str]], Sequence[object] | None] | None = None,
    collect: bool = True,
) -> CampaignSummary:
    """Follow the campaign until every job has its line, or, given the ids of the jobs a
    command `sent` again, until each of those has its new line; returns the summary.

    A campaign `run` collects is collected here; one that a `collect` service or a watcher
    writes is only watched (its file may be on another host). A Redis outage, however
    long, only pauses the bar. A Redis that comes back without its data has lost the
    campaign: with `rebuild` (given the job ids the results file holds, it makes the
    campaign known again and sends the rest) the campaign goes on, else it is an error
    saying how to rebuild it. With `collect` False it only watches: another process
    (the `run` collecting the campaign) writes the file. `on_complete` gets the results
    file once it is complete.
    """
    following = _Following(client, info, watcher, on_complete, consumer, sent, rebuild, collect)
    return following.to_the_end()


class _Following:
    """One campaign followed round by round (`follow_campaign`)."""

    def __init__(
        self,
        client: redis.Redis,
        info: CampaignInfo,
        watcher: Watcher,
        on_complete: Callable[[Path], object],
        consumer: str | None,
        sent: Sequence[str] | None,
        rebuild: Callable[[set[str]], Sequence[object] | None] | None,
        collect: bool,
    ) -> None:
        self.client, self.info, self.watcher = client, info, watcher
        self.on_complete, self.consumer, self.sent = on_complete, consumer, sent
        self.rebuild, self.collect = rebuild, collect
        self.collector = self.new_collector()
        self.ride_out = RideOut(watcher.outage, client)
        self.started = time.monotonic()
        self.warned = False
        self.held: Paused | None = None
        self.checked = float("-inf")

    def new_collector(self) -> Collector | None:
        if self.info.collector != "run" or not self.collect:
            return None
        out_dir = Path(self.info.out_dir)
        return Collector(
            self.client,
            self.consumer or f"run-{self.info.campaign_id}",
            lambda _: out_dir,
            lambda _: self.info.total,
            self.on_complete,
        )

    def to_the_end(self) -> CampaignSummary:
        campaign_id = self.info.campaign_id
        try:
            while True:
                state = self.ride_out(self.one_round)
                rate = state.done / max(time.monotonic() - self.started, 1e-6)
                if statistics_due(state.done, state.total, rate) and graded_so_far(
                    self.collector, campaign_id
                ):
                    import_in_background()  # once; the summary waits for it
                if time.monotonic() - self.checked >= PAUSE_CHECK_SECONDS and not state.finished:
                    self.check_pause()
                self.watcher.round(state, rate, self.held)
                if not state.known:
                    self.recover()
                if state.finished:
                    break
                if not self.warned and time.monotonic() - self.started > NO_WORKER_WARNING_SECONDS:
                    self.warn_if_unserved()
        finally:
            summary = self.ride_out(
                lambda: campaign_summary(self.client, self.info, self.collector)
            )
            if self.collector is not None:
                self.collector.close()
        return summary

    def one_round(self) -> Progress:
        polled = time.monotonic()
        if self.collector is not None:
            self.collector.poll([self.info.campaign_id], block_ms=250)
        # Results that come one by one are taken a few at a time: one fsync and
        # one progress query for several lines, a few ms later each.
        pause = MIN_POLL_SECONDS if self.collector else 0.25
        time.sleep(max(0.0, polled + pause - time.monotonic()))
        if self.sent is None:
            return progress(self.client, self.info.campaign_id)
        return round_progress(self.client, self.info.campaign_id, self.sent)

    def check_pause(self) -> None:
        self.checked = time.monotonic()
        now_held = self.ride_out(lambda: paused(self.client, self.info.campaign_id))
        if (now_held is None) != (self.held is None):
            self.watcher.pause_changed(now_held)
        self.held = now_held

    def recover(self) -> None:
        """Redis no longer knows the campaign: rebuilt from the results file this command
        writes, or an error saying how to rebuild it."""
        collector, rebuild = self.collector, self.rebuild
        if collector is None or rebuild is None:
            summary = campaign_summary(self.client, self.info, collector)
            raise lost_campaign(self.info, summary)
        kept = set(collector.results_file(self.info.campaign_id).job_ids)
        collector.close()
        again = self.ride_out(functools.partial(rebuild, kept))
        self.watcher.rebuilt(len(kept), again)
        self.collector = self.new_collector()

    def warn_if_unserved(self) -> None:
        missing = self.ride_out(lambda: unserved_queues(self.client, self.info))
        if missing is not None:
            self.watcher.unserved(missing)
        self.warned = missing is not None


def campaign_summary(
    client: redis.Redis, info: CampaignInfo, collector: Collector | None
) -> CampaignSummary:
    """From the file this command writes; else from the campaign's file if it is on this
    host; else (on another host) from Redis's counts alone."""
    if collector is not None and info.campaign_id in collector.files:
        return collector.files[info.campaign_id].summary
    summary = CampaignSummary(campaign_id=info.campaign_id, expected=info.total)
    path = file_here(client, info.campaign_id, results_path(Path(info.out_dir), info.campaign_id))
    if path is not None and path.exists():
        for result in read_results(path):
            summary.add(result)
        return summary
    summary.counts = progress(client, info.campaign_id).counts
    summary.results = sum(summary.counts.values())
    return summary


def lost_campaign(info: CampaignInfo, summary: CampaignSummary) -> EvalrelayError:
    """Redis restarted without its data: say what was kept and what to do, never a traceback."""
    file = results_path(Path(info.out_dir), info.campaign_id)
    return EvalrelayError(
        f"{LOST}: campaign {info.campaign_id} is gone from it. {summary.results} of "
        f"{info.total} results are in {file}; on the host of that file, `evalrelay resume "
        f"{info.campaign_id}` rebuilds the campaign from its eval files and sends the rest"
    )


def unserved_queues(client: redis.Redis, info: CampaignInfo) -> Unserved | None:
    """The campaign's queues no live worker serves, or None when each has one. A worker's
    `seen` is Redis's time, and so is `now`."""
    now = now_seconds(client)
    alive = [
        json.loads(raw)
        for raw in client.hvals(workers_key())
        if now - float(json.loads(raw).get("seen", 0)) < NO_WORKER_WARNING_SECONDS
    ]
    served = {queue for worker in alive for queue in worker.get("queues", [])}
    unserved = [queue for queue in info.queues if queue not in served]
    if alive and not unserved:
        return None
    return Unserved(queues=",".join(unserved or info.queues) or "api", any_alive=bool(alive))

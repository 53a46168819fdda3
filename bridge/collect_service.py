"""The collector service (`evalrelay collect`): every campaign no `run` follows, its
results written into each campaign's results file once, for days; rebuilt from its
record when Redis comes back without it. What a person sees of it is the command's
(`CollectView`): this module works, the command prints."""

from __future__ import annotations

import contextlib
import logging
import socket
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Protocol

import redis

from evalrelay.bridge.clock import now_seconds
from evalrelay.bridge.connection import RideOut
from evalrelay.bridge.contract.campaign_state import current_epoch
from evalrelay.bridge.delivery.holders import ALIVE_SECONDS, beat
from evalrelay.bridge.errors import EvalrelayError
from evalrelay.bridge.keys import collectors_key
from evalrelay.bridge.queue.campaigns import (
    CampaignInfo,
    infos_of,
    list_campaigns,
    progress,
    progress_many,
)
from evalrelay.bridge.queue.following import LOST
from evalrelay.bridge.queue.rebuild import (
    lost_campaigns,
    read_record,
    rebuild,
    record_path,
    write_record,
)
from evalrelay.bridge.queue.rebuilt_apart import eval_files_here, restore_from_results
from evalrelay.bridge.queue.runtime import Runtime
from evalrelay.bridge.reports.writer import ReportsApart
from evalrelay.bridge.results.collector import Collector
from evalrelay.bridge.results.results_file import job_ids_on_disk, results_path
from evalrelay.bridge.results.retention import RETENTION_SECONDS

log = logging.getLogger(__name__)


class CollectView(Protocol):
    """What the command running the service shows of it."""

    def progress(self, campaign_id: str, done: int, total: int) -> None:
        """Where a campaign is, each round."""

    def complete(self, campaign_id: str, done: int, results: Path) -> None:
        """A campaign has every line, in `results`."""


def collect_campaigns(
    runtime: Runtime,
    view: CollectView,
    stopping: Callable[[], bool],
    *,
    out: Path | None = None,
    campaign_ids: Sequence[str] = (),
    consumer: str | None = None,
    inbox_campaigns: bool = False,
) -> None:
    """Write results from Redis into each campaign's results file (`out`, else the
    campaign's own folder): every service campaign (and with `inbox_campaigns` every
    watcher's) until `stopping`, or the campaigns named until each is complete. A restarted
    collector with the same `consumer` name resumes its own unacknowledged entries."""
    consumer = consumer or f"collect@{socket.gethostname()}"
    service = CollectorService(runtime, view, out, list(campaign_ids), consumer, inbox_campaigns)
    ride_out = RideOut(lambda text: log.warning("collect: %s", text), runtime.client)
    try:
        while not stopping() and not service.done():
            ride_out(lambda: service.one_round(stopping))
    except KeyboardInterrupt:
        pass
    finally:
        service.collector.close()
        service.reports.close()
        with contextlib.suppress(redis.RedisError):
            runtime.client.hdel(collectors_key(), service.consumer)


class CollectorService:
    """One collector service's state between rounds: the campaigns it knows, has recorded
    and has finished, and the Redis epoch it last saw (a new one: Redis lost its data)."""

    def __init__(
        self,
        runtime: Runtime,
        view: CollectView,
        out: Path | None,
        campaign_ids: list[str],
        consumer: str,
        inbox_campaigns: bool,
    ) -> None:
        self.runtime, self.client, self.view = runtime, runtime.client, view
        self.out, self.campaign_ids, self.consumer = out, campaign_ids, consumer
        self.inbox_campaigns = inbox_campaigns
        self.infos: dict[str, CampaignInfo] = {}
        self.finished: set[str] = set()
        self.recorded: set[str] = set()
        self.seen: set[str] = set()
        self.epoch_seen: str | None = None
        self.beat_at = 0.0  # when this collector last reported itself, for `evalrelay health`
        self.reports = ReportsApart()
        self.collector = Collector(
            self.client,
            consumer,
            self.out_dir_for,
            lambda c: self.infos[c].total,
            self.reports,
            counting=True,
        )

    def done(self) -> bool:
        """Every campaign it was named has every line (a service of all campaigns never is)."""
        return bool(self.campaign_ids) and self.finished.issuperset(self.campaign_ids)

    def one_round(self, stopping: Callable[[], bool]) -> None:
        if stopping():
            raise KeyboardInterrupt
        found = self.campaigns()
        if time.monotonic() - self.beat_at >= BEAT_SECONDS:
            beat(self.client, collectors_key(), self.consumer, {"host": socket.gethostname()})
            self.beat_at = time.monotonic()
        self.rebuild_if_lost()
        self.reports.end_if_idle()
        self.infos.update((i.campaign_id, i) for i in found)
        new = [i for i in found if i.campaign_id not in self.seen]
        self.finished.update(self.finished_elsewhere(new))
        self.seen.update(i.campaign_id for i in found)
        active = [i.campaign_id for i in found if i.campaign_id not in self.finished]
        for campaign_id in active:
            self.out_dir_for(campaign_id)  # its record, before Redis may lose it
        self.collector.poll(active, block_ms=1000)
        for campaign_id in active:
            state = progress(self.client, campaign_id)
            self.view.progress(campaign_id, state.done, state.total)
            if state.finished:
                self.collector.finish(campaign_id)
                self.finished.add(campaign_id)
                where = results_path(self.out_dir_for(campaign_id), campaign_id)
                self.view.complete(campaign_id, state.done, where)

    def campaigns(self) -> list[CampaignInfo]:
        """The campaigns named, else every service campaign (and watcher's, if asked)."""
        if self.campaign_ids:
            return infos_of(self.client, self.campaign_ids)
        wanted = {"service", "watch"} if self.inbox_campaigns else {"service"}
        return [i for i in list_campaigns(self.client, limit=1000) if i.collector in wanted]

    def rebuild_if_lost(self) -> None:
        """A new epoch: Redis lost its data since the last round, so the campaigns this
        service was collecting are rebuilt (they are found again next round). At its
        first round, a service of all campaigns rebuilds those whose record is in `out`."""
        epoch = current_epoch(self.client)
        if self.epoch_seen not in (None, epoch):
            self.collector.redis_lost()
            lost = [self.infos[c] for c in sorted(set(self.infos) - self.finished)]
            rebuild_all(self.runtime, lost, self.out_dir_for, self.consumer)
        elif self.epoch_seen is None and self.out is not None and not self.campaign_ids:
            kept = lost_here(self.client, self.out)
            self.infos.update((i.campaign_id, i) for i in kept)
            self.recorded.update(i.campaign_id for i in kept)
            if kept:
                rebuild_all(self.runtime, kept, self.out_dir_for, self.consumer)
        self.epoch_seen = epoch

    def finished_elsewhere(self, new: list[CampaignInfo]) -> list[str]:
        """Campaigns complete when first seen whose file is not here: another collector
        wrote them; this one neither claims them nor keeps a record of them."""
        states = progress_many(self.client, [i.campaign_id for i in new])
        return [
            i.campaign_id
            for i in new
            if states[i.campaign_id].finished
            and not results_path(self.folder_of(i), i.campaign_id).exists()
        ]

    def folder_of(self, info: CampaignInfo) -> Path:
        if info.collector == "watch":
            return Path(info.out_dir)
        return self.out or Path(info.out_dir)

    def out_dir_for(self, campaign_id: str) -> Path:
        """Where the campaign's results go; its record (`bridge.queue.rebuild`) is kept
        there first, to rebuild it from (here, or by `resume`) should Redis lose it."""
        info = self.infos[campaign_id]
        folder = self.folder_of(info)
        if info.collector == "watch":
            # One results file per campaign: the one its watcher writes too (whichever
            # of them holds the campaign's collector lease writes it). A watcher keeps
            # the record of its own: where its dropped file waits.
            return folder
        if campaign_id not in self.recorded:
            write_record(info.model_copy(update={"out_dir": str(folder)}))
            self.recorded.add(campaign_id)
        return folder


def lost_here(client: redis.Redis, folder: Path) -> list[CampaignInfo]:
    """The unfinished campaigns of `collect` services whose record is in `folder` and that
    Redis does not know though they are within the retention: it lost them. (One older than
    the retention was removed on purpose.)"""
    known = [i.campaign_id for i in list_campaigns(client, limit=None)]
    oldest = now_seconds(client) - RETENTION_SECONDS
    return [
        lost.record.info
        for lost in lost_campaigns(folder, known)
        if lost.record.dropped is None
        and lost.record.info.collector == "service"
        and lost.record.info.created_at.timestamp() > oldest
    ]


def restore_here(runtime: Runtime, info: CampaignInfo, results: Path, consumer: str) -> None:
    """The half of a rebuild this host can do without the campaign's eval files: its record
    and the results it kept (`bridge.queue.rebuilt_apart`)."""
    kept = restore_from_results(runtime.client, info, results, consumer)
    if kept is None:
        log.warning("collect: campaign %s was rebuilt by another process", info.campaign_id)
        return
    cwd = info.plan.cwd if info.plan else None
    log.error(
        "collect: campaign %s made known again from %s (%d results kept); its eval files "
        "are not on this host, so its jobs are not: `evalrelay resume %s` in %s on the host "
        "that has them sends the jobs without a line",
        info.campaign_id, results, kept, info.campaign_id, cwd or "the folder it was run from",
    )  # fmt: skip


BEAT_SECONDS = ALIVE_SECONDS / 3
"""How often a collector reports itself alive in Redis (`evalrelay health` reads it)."""


def rebuild_all(
    runtime: Runtime,
    infos: list[CampaignInfo],
    out_dir_for: Callable[[str], Path],
    consumer: str,
) -> None:
    """Redis lost its data: rebuild each campaign this service was collecting from the
    record it kept beside the results (its eval files must be on this host). Whatever
    cannot be rebuilt here is said, with what rebuilds it elsewhere."""
    log.error(
        "collect: %s: the campaigns it was collecting are gone from it (%s); rebuilding "
        "each from its eval files and its results file",
        LOST, ", ".join(i.campaign_id for i in infos) or "none unfinished",
    )  # fmt: skip
    for info in infos:
        campaign_id = info.campaign_id
        if info.collector == "watch":
            log.error(
                "collect: campaign %s was dropped in a watcher's inbox: a watcher of that "
                "inbox rebuilds it, from its file in queued/",
                campaign_id,
            )
            continue
        folder = out_dir_for(campaign_id)
        results = results_path(folder, campaign_id)
        try:
            record = read_record(record_path(folder, campaign_id))
            if not eval_files_here(record.info):
                restore_here(runtime, record.info, results, consumer)
                continue
            done = job_ids_on_disk(results)
            sent = rebuild(runtime.client, runtime.queue, record.info, done, consumer)
        except (EvalrelayError, ValueError, OSError) as exc:
            log.error(
                "collect: campaign %s was not rebuilt: %s. On the host of its eval files, "
                "`evalrelay resume %s` rebuilds it",
                campaign_id, exc, results,
            )  # fmt: skip
            continue
        if sent is None:
            log.warning("collect: campaign %s was rebuilt by another process", campaign_id)
            continue
        log.warning(
            "collect: campaign %s rebuilt from its eval files and %s: %d results kept, "
            "%d jobs sent again",
            campaign_id, results, len(done), len(sent),
        )  # fmt: skip

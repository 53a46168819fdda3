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
from evalrelay.bridge.reports.writer import ensure_html_beside
from evalrelay.bridge.results.collector import Collector
from evalrelay.bridge.results.results_file import job_ids_on_disk, results_path
from evalrelay.bridge.results.retention import RETENTION_SECONDS
from evalrelay.bridge.results.statistics import import_in_background

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
    infos: dict[str, CampaignInfo] = {}
    finished: set[str] = set()

    recorded: set[str] = set()
    seen: set[str] = set()

    def finished_elsewhere(new: list[CampaignInfo]) -> list[str]:
        """Campaigns complete when first seen whose file is not here: another collector
        wrote them; this one neither claims them nor keeps a record of them."""
        states = progress_many(runtime.client, [i.campaign_id for i in new])
        return [
            i.campaign_id
            for i in new
            if states[i.campaign_id].finished
            and not results_path(folder_of(i), i.campaign_id).exists()
        ]

    def folder_of(info: CampaignInfo) -> Path:
        return Path(info.out_dir) if info.collector == "watch" else out or Path(info.out_dir)

    epoch_seen: str | None = None  # this Redis's mark when last looked

    def out_dir_for(campaign_id: str) -> Path:
        """Where the campaign's results go; its record (`bridge.queue.rebuild`) is kept
        there first, to rebuild it from (here, or by `resume`) should Redis lose it."""
        folder = folder_of(infos[campaign_id])
        if infos[campaign_id].collector == "watch":
            # One results file per campaign: the one its watcher writes too (whichever
            # of them holds the campaign's collector lease writes it).
            return folder
        if campaign_id not in recorded:
            # A watcher keeps the record of its own: where its dropped file waits.
            write_record(infos[campaign_id].model_copy(update={"out_dir": str(folder)}))
            recorded.add(campaign_id)
        return folder

    collector = Collector(
        runtime.client,
        consumer,
        out_dir_for,
        lambda c: infos[c].total,
        ensure_html_beside,
    )
    ride_out = RideOut(lambda text: log.warning("collect: %s", text), runtime.client)
    beat_at = [0.0]  # when this collector last reported itself, for `evalrelay health`

    def one_round() -> None:
        nonlocal epoch_seen
        if stopping():
            raise KeyboardInterrupt
        found = (
            infos_of(runtime.client, campaign_ids)
            if campaign_ids
            else [
                i
                for i in list_campaigns(runtime.client, limit=1000)
                if i.collector == "service" or (inbox_campaigns and i.collector == "watch")
            ]
        )
        if time.monotonic() - beat_at[0] >= BEAT_SECONDS:
            beat(runtime.client, collectors_key(), consumer, {"host": socket.gethostname()})
            beat_at[0] = time.monotonic()
        epoch = current_epoch(runtime.client)
        if epoch_seen not in (None, epoch):  # the rebuilt are found again next round
            collector.redis_lost()
            lost = [infos[c] for c in sorted(set(infos) - finished)]
            rebuild_all(runtime, lost, out_dir_for, consumer)
        elif epoch_seen is None and out is not None and not campaign_ids:
            # Started after Redis lost its data: the campaigns whose record is here.
            kept = lost_here(runtime.client, out)
            infos.update((i.campaign_id, i) for i in kept)
            recorded.update(i.campaign_id for i in kept)
            if kept:
                rebuild_all(runtime, kept, out_dir_for, consumer)
        epoch_seen = epoch
        infos.update((i.campaign_id, i) for i in found)
        finished.update(finished_elsewhere([i for i in found if i.campaign_id not in seen]))
        seen.update(i.campaign_id for i in found)
        active = [i.campaign_id for i in found if i.campaign_id not in finished]
        for campaign_id in active:
            out_dir_for(campaign_id)  # its record, before Redis may lose it
        collector.poll(active, block_ms=1000)
        if collector.graded():  # its summaries' libraries, on a thread, once
            import_in_background()
        for campaign_id in active:
            state = progress(runtime.client, campaign_id)
            view.progress(campaign_id, state.done, state.total)
            if state.finished:
                collector.finish(campaign_id)
                finished.add(campaign_id)
                where = results_path(out_dir_for(campaign_id), campaign_id)
                view.complete(campaign_id, state.done, where)

    try:
        while not stopping() and not (campaign_ids and finished.issuperset(campaign_ids)):
            ride_out(one_round)
    except KeyboardInterrupt:
        pass
    finally:
        collector.close()
        with contextlib.suppress(redis.RedisError):
            runtime.client.hdel(collectors_key(), consumer)


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

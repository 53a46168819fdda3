"""Which campaigns the live view shows, and where each one's results file is: the campaigns
Redis knows, and the `<id>.jsonl` files of the results folder that it does not.

What Redis said last is kept, so that while it is out of reach its campaigns are still
listed (marked so, counted from their files when these are here) and their pages still
made from their files.
"""

from __future__ import annotations

import re
import socket
import threading
from dataclasses import dataclass
from pathlib import Path

import redis

from evalrelay.bridge.contract.campaign_state import ended_many
from evalrelay.bridge.keys import campaign_key
from evalrelay.bridge.live.feed import CampaignRow, State
from evalrelay.bridge.live.redis_link import RedisLink
from evalrelay.bridge.live.tally import Tallies, Tally
from evalrelay.bridge.queue.campaigns import CampaignInfo, Progress, list_campaigns, progress_many
from evalrelay.bridge.queue.steering import Paused, pauses
from evalrelay.bridge.results.collected import (
    PARTIAL,
    ResultsHome,
    local_file,
    results_homes,
    where_results_are,
)
from evalrelay.bridge.results.results_file import results_path

CAMPAIGN_ID = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_.-]{0,199}")
"""Ids are slugs (`bridge.queue.campaigns.new_campaign_id`), and are file names here."""

ATTEMPTS = ".attempts"
"""`<id>.attempts.jsonl` holds the earlier lines of retried jobs: not a campaign."""


def is_campaign_id(text: str) -> bool:
    """A slug that names one file in one folder: never a path, never `..`, never the part
    of a campaign a collector wrote before another took it over (`PARTIAL`)."""
    return (
        CAMPAIGN_ID.fullmatch(text) is not None
        and ".." not in text
        and not text.endswith(ATTEMPTS)
        and PARTIAL not in text
    )


@dataclass(frozen=True)
class Known:
    """What Redis said of a campaign when last asked."""

    info: CampaignInfo
    progress: Progress
    home: ResultsHome | None
    paused: Paused | None = None
    cancelled: bool = False
    """Cancelled for good (`evalrelay cancel`)."""

    @property
    def file(self) -> Path | None:
        """The file a collector on this host writes (or will), or None when it is on
        another host."""
        default = results_path(Path(self.info.out_dir), self.info.campaign_id)
        return local_file(self.home, default)


@dataclass(frozen=True)
class Located:
    """A campaign a page is asked for: its row, its queues (for its workers), its file."""

    row: CampaignRow
    queues: list[str]
    file: Path | None
    """Its results file on this host (maybe not written yet); None when on another host."""


class Campaigns:
    """The campaigns of one Redis and one results folder, as the pages show them."""

    def __init__(self, link: RedisLink, folder: Path) -> None:
        self.link = link
        self.folder = folder
        self.tallies = Tallies()
        self._known: dict[str, Known] = {}
        self._lock = threading.Lock()

    def listing(self) -> list[CampaignRow]:
        """Every campaign, newest first."""
        fresh = self.link.ask(_all_known)
        with self._lock:
            if fresh is not None:
                self._known = {k.info.campaign_id: k for k in fresh}
            known = dict(self._known)
        reachable = fresh is not None
        rows, counted = [], set()
        for entry in known.values():
            if not reachable and entry.file is not None:
                counted.add(entry.file)
            rows.append(self._row(entry, reachable))
        for campaign_id, path in self._folder_files().items():
            if campaign_id not in known:
                counted.add(path)
                row = self._file_row(campaign_id, path, reachable)
                if row is not None:
                    rows.append(row)
        self.tallies.forget_all_but(counted)
        return sorted(rows, key=_newest_first)

    def locate(self, campaign_id: str) -> Located | None:
        """The campaign and its file, or None when neither Redis nor the folder has it."""
        if not is_campaign_id(campaign_id):
            return None
        answer = self.link.ask(lambda client: _one_known(client, campaign_id))
        reachable = answer is not None
        with self._lock:
            if answer:
                self._known[campaign_id] = answer[0]
            # Redis out of reach: what it said last.
            entry = self._known.get(campaign_id) if answer or not reachable else None
        if entry is not None:
            return Located(self._row(entry, reachable), entry.info.queues, entry.file)
        path = results_path(self.folder, campaign_id)
        row = self._file_row(campaign_id, path, reachable)
        return Located(row, [], path) if row is not None else None

    def known_ids(self) -> list[str]:
        """What a 404 names: the campaigns there are pages for."""
        return [row.campaign_id for row in self.listing()]

    def _row(self, entry: Known, reachable: bool) -> CampaignRow:
        info, progress = entry.info, entry.progress
        done, counts = progress.done, progress.counts
        if not reachable and entry.file is not None:
            tally = self.tallies.of(entry.file)
            if tally is not None:
                done, counts = tally.lines, dict(tally.counts)
        return CampaignRow(
            campaign_id=info.campaign_id,
            name=info.name,
            done=done,
            total=progress.total,
            counts=counts,
            state=_state(entry, reachable),
            created_at=info.created_at,
            targets=info.targets,
            results_in=where_results_are(entry.home, info.out_dir),
            paused=entry.paused.reason if entry.paused else None,
        )

    def _file_row(self, campaign_id: str, path: Path, reachable: bool) -> CampaignRow | None:
        tally: Tally | None = self.tallies.of(path)
        if tally is None:
            return None
        return CampaignRow(
            campaign_id=campaign_id,
            done=tally.lines,
            counts=dict(tally.counts),
            state="file only" if reachable else "out of reach",
            created_at=tally.first_started,
            targets=sorted(tally.targets),
            results_in=f"{socket.gethostname()}:{path.resolve()}",
        )

    def _folder_files(self) -> dict[str, Path]:
        if not self.folder.is_dir():
            return {}
        found = (p for p in self.folder.glob("*.jsonl") if p.is_file())
        return {p.stem: p for p in sorted(found) if is_campaign_id(p.stem)}


def _all_known(client: redis.Redis) -> list[Known]:
    infos = list_campaigns(client, limit=None)
    ids = [i.campaign_id for i in infos]
    states, homes = progress_many(client, ids), results_homes(client, ids)
    held, ended = pauses(client, ids), ended_many(client, ids)
    return [
        Known(
            i,
            states[i.campaign_id],
            homes[i.campaign_id],
            held.get(i.campaign_id),
            i.campaign_id in ended,
        )
        for i in infos
    ]


def _one_known(client: redis.Redis, campaign_id: str) -> list[Known]:
    """The campaign as Redis knows it: one entry, or none when Redis does not know it."""
    raw = client.get(campaign_key(campaign_id))
    if raw is None:
        return []
    info = CampaignInfo.model_validate_json(raw)
    progress = progress_many(client, [campaign_id])[campaign_id]
    home = results_homes(client, [campaign_id])[campaign_id]
    held = pauses(client, [campaign_id]).get(campaign_id)
    return [Known(info, progress, home, held, bool(ended_many(client, [campaign_id])))]


def _state(entry: Known, reachable: bool) -> State:
    if not reachable:
        return "out of reach"
    if entry.cancelled:
        return "cancelled"
    return "finished" if entry.progress.finished else "running"


def _newest_first(row: CampaignRow) -> tuple[bool, float]:
    """Newest first; a file with no readable line last."""
    return (row.created_at is None, -row.created_at.timestamp() if row.created_at else 0.0)

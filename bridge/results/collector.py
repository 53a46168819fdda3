"""The collector: results from Redis streams into JSONL files, each job exactly once.

It reads each campaign's stream through one consumer group. An entry is acknowledged
only after its line is fsynced; entries left pending by a collector that died are
claimed by another after `CLAIM_IDLE_MS`. Duplicates (a job delivered twice, an entry
read twice) are dropped against the ids already in the file.

One collector at a time writes a campaign (its collector lease). Acknowledged entries
move from the stream into a compressed checkpoint (`bridge.results.checkpoint`), where
results stay until the campaign's file is complete, so a collector taking a campaign over
on another host, or into another folder, first copies into its file what the one before
wrote (`bridge.results.collected`): the file a campaign ends with is whole. The one cut
off keeps its part as `<campaign>.partial-<host>.jsonl` and makes no report of it.

A disk error (a full disk, a file-size limit, an I/O error, a failing fsync) never ends
the collector: it stops acknowledging that campaign's results, which wait in the stream,
says so in its log and in Redis (`evalrelay status`, `serve`), and tries again with
backoff until the disk takes the lines. `summary.json` at the end counts the lines on disk.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import time
from collections import defaultdict
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, cast

import redis
from pydantic import ValidationError
from redis.backoff import ExponentialBackoff

from evalrelay.bridge.clock import now_seconds
from evalrelay.bridge.keys import (
    COLLECTOR_GROUP,
    collector_lease_key,
    compacted_key,
    results_stream_key,
)
from evalrelay.bridge.lua_scripts import HOLD_COLLECTOR, release_lock
from evalrelay.bridge.results.checkpoint import CHECKPOINT_ENTRIES, move_to_checkpoint
from evalrelay.bridge.results.collected import (
    count,
    empty_stream,
    home_elsewhere,
    make_home,
    mark_partial,
)
from evalrelay.bridge.results.paid import paid_again
from evalrelay.bridge.results.result import Result
from evalrelay.bridge.results.results_file import (
    ResultsFile,
    results_path,
    summary_on_disk,
    summary_path,
)
from evalrelay.bridge.results.retention import compact
from evalrelay.bridge.results.retry_request import RetryAnswer, RetryRequest, answer, take_requests
from evalrelay.bridge.results.set_aside import set_aside
from evalrelay.bridge.results.summary import write_atomically
from evalrelay.bridge.results.trial_files import unpack_trial_files
from evalrelay.bridge.results.write_errors import can_write, cannot_write, describe

log = logging.getLogger(__name__)

CLAIM_IDLE_MS = 30_000
"""An entry unacknowledged this long belongs to a dead collector and may be taken over."""

SUMMARY_INTERVAL_SECONDS = 1.0
"""How often a campaign's `summary.json` is written while it runs, at the most often."""

SUMMARY_SHARE = 0.05
"""The share of a collector's time the running summaries may take: their statistics grow
with the graded results (seconds of CPU for a large campaign: docs/performance.md), and
written every second they would take most of a collector's time. After a write that took
`d` seconds, the next waits at least `d / SUMMARY_SHARE`; the summary written at a
campaign's end is always whole."""

CLAIM_INTERVAL_SECONDS = 5.0
"""How often to look for entries abandoned by dead collectors."""

RETRY_CHECK_SECONDS = 0.25
"""How often to look for `retry` requests of the campaigns this collector holds."""

COLLECTOR_LEASE_MS = int(1000 * float(os.environ.get("EVALRELAY_COLLECTOR_LEASE_SECONDS", "30")))
"""A collector that has not polled a campaign for this long loses it to another (and
`status` says the campaign has no collector)."""

Entry = tuple[str, dict[str, str]]

DISK_RETRY = ExponentialBackoff(cap=10.0, base=0.5)
"""Between two tries to write a file the disk refused: soon, then every 10 s."""


@dataclass
class DiskTrouble:
    """A campaign whose file the disk refuses, and when to try it again."""

    path: Path
    error: str
    since: float
    failures: int = 0
    retry_at: float = 0.0


STREAMS_LOST = ("NOGROUP", "UNBLOCKED")
"""Redis's answers when a stream or its group is gone: before the read, or during it."""


class Collector:
    def __init__(
        self,
        client: redis.Redis,
        consumer: str,
        out_dir_for: Callable[[str], Path],
        expected_for: Callable[[str], int | None] = lambda _: None,
        on_complete: Callable[[Path], object] = lambda _: None,
        counting: bool = False,
    ) -> None:
        """`on_complete` gets the JSONL path of each complete campaign this collector finishes,
        maybe more than once (the commands pass the HTML report writer, which writes only a
        missing or stale report; results know nothing of reports). Its summaries import
        the statistics' libraries on a thread when first needed; the commands start that
        import earlier, each when it suits them (`import_in_background`).

        A `counting` collector (the services', which run for days) keeps no answers: its
        summaries, running and final, have counts and no statistics, so its memory does not
        grow with the graded results nor hold the statistics' libraries; its `on_complete`
        completes the final one (`results_file.complete_summary`), apart from it."""
        self.client = client
        self.counting = counting
        self.consumer = consumer
        self.out_dir_for = out_dir_for
        self.expected_for = expected_for
        self.on_complete = on_complete
        self.files: dict[str, ResultsFile] = {}
        self.own_pending_read: set[str] = set()
        self.summary_written = 0.0
        self.summary_interval = SUMMARY_INTERVAL_SECONDS
        self.groups: set[str] = set()
        self.held_at: dict[str, float] = {}
        self.claimed_at = 0.0
        self.retries_checked_at = 0.0
        self.troubles: dict[str, DiskTrouble] = {}
        self.opened: dict[str, Path] = {}
        """Each campaign's file this collector wrote, to mark it partial if taken over."""
        self.unfinished: dict[str, Path] = {}
        """Campaigns finished in Redis whose summary (and trimming) the disk refused so far."""
        self.acknowledged: dict[str, list[tuple[str, str | None]]] = defaultdict(list)
        """Each campaign's entries acknowledged and still in its stream, with their result
        JSON, until there are enough to move into its checkpoint."""

    def poll(self, campaigns: list[str], block_ms: int = 1000) -> int:
        """One round over the campaigns' streams; returns how many lines it wrote."""
        try:
            return self._poll(campaigns, block_ms)
        except (redis.ConnectionError, redis.TimeoutError):
            # Lines may be written and not acknowledged, and the lease may lapse while
            # Redis is away: the files are opened anew, which records such lines.
            self._let_go_of_files()
            raise

    def _poll(self, campaigns: list[str], block_ms: int) -> int:
        for campaign_id in [c for c in self.unfinished if not self._waiting(c)]:
            self.finish(campaign_id)
        campaigns = [
            c for c in self._not_compacted(campaigns) if self._hold(c) and not self._waiting(c)
        ]
        if not campaigns:
            time.sleep(self._pause(block_ms))
            return 0
        for campaign_id in campaigns:
            self._ensure_group(campaign_id)
        if time.monotonic() - self.retries_checked_at >= RETRY_CHECK_SECONDS:
            self._answer_retries(campaigns)
            self.retries_checked_at = time.monotonic()
        try:
            entries = self._own_pending(campaigns)
            if time.monotonic() - self.claimed_at >= CLAIM_INTERVAL_SECONDS:
                entries += self._claim_abandoned(campaigns)
                self.claimed_at = time.monotonic()
            if not entries:
                entries = self._read_new(campaigns, block_ms)
        except redis.ResponseError as exc:
            if not str(exc).startswith(STREAMS_LOST):
                raise
            # Redis restarted without its data, or its keys were deleted while this read
            # waited: make the groups again on the next poll.
            log.warning("collector %s: result streams were lost; reading them anew", self.consumer)
            self.groups.clear()
            self.own_pending_read.clear()
            return 0
        written = self._handle(entries)
        self._maybe_write_summaries()
        return written

    def _answer_retries(self, campaigns: list[str]) -> None:
        """Set aside the lines `retry` asked for, between two writes of the file, and say
        which: the lines are read afresh when the file is next opened."""
        for campaign_id, request in take_requests(self.client, campaigns).items():
            answer(self.client, request, self._set_aside(campaign_id, request))

    def _set_aside(self, campaign_id: str, request: RetryRequest) -> RetryAnswer:
        file = self.files.pop(campaign_id, None)
        path = file.path if file else results_path(self.out_dir_for(campaign_id), campaign_id)
        if file is not None:
            file.close()
        try:
            moved = set_aside(self.client, campaign_id, path, set(request.statuses))
        except (OSError, ValueError) as exc:
            why = describe(exc) if isinstance(exc, OSError) else str(exc)
            error = f"cannot rewrite {path}: {why}"
            log.warning("collector %s: %s", self.consumer, error)
            return RetryAnswer(collector=self.consumer, error=error)
        log.info(
            "collector %s: %d lines of campaign %s set aside for %s's retry",
            self.consumer, len(moved), campaign_id, request.by,
        )  # fmt: skip
        return RetryAnswer(collector=self.consumer, moved={r.job_id: r.summary() for r in moved})

    def _not_compacted(self, campaigns: list[str]) -> list[str]:
        """A compacted campaign's file is complete and Redis no longer knows which jobs it
        holds: a late duplicate in its stream waits there, unread, until `evalrelay gc`."""
        if not campaigns:
            return []
        pipe = self.client.pipeline(transaction=False)
        for campaign_id in campaigns:
            pipe.exists(compacted_key(campaign_id))
        return [c for c, gone in zip(campaigns, pipe.execute(), strict=True) if not gone]

    def redis_lost(self) -> None:
        """Redis lost its data: let go of every file and consumer group. A campaign made
        known again (`bridge.queue.rebuild`) has its file opened anew, which records the
        file's lines in the new Redis (`make_home`): kept open, they would count nowhere
        and the campaign would never end."""
        self._let_go_of_files()
        self.groups.clear()
        self.opened.clear()

    def _let_go_of_files(self) -> None:
        for file in self.files.values():
            file.close()
        self.files.clear()
        self.acknowledged.clear()  # acknowledged, they stay in the stream until complete
        self.held_at.clear()
        self.own_pending_read.clear()

    def finish(self, campaign_id: str) -> None:
        """Write the campaign's final summary from its file on disk, close the file, empty
        the stream once the file holds every result, and let other collectors have it. A
        disk error leaves it to be finished again at a later poll; a file another collector
        took the place of is marked partial, and no report is made of it."""
        file = self.files.pop(campaign_id, None)
        if file is not None:
            file.close()
        if campaign_id in self.opened:  # written here, maybe let go of in a Redis outage
            self.unfinished[campaign_id] = self.opened[campaign_id]
        path = self.unfinished.get(campaign_id)
        path = path or results_path(self.out_dir_for(campaign_id), campaign_id)
        self.held_at.pop(campaign_id, None)
        try:
            self._finish_file(campaign_id, path)
        except OSError as exc:
            self._cannot_write(campaign_id, path, exc)
        else:
            self.unfinished.pop(campaign_id, None)
            self.opened.pop(campaign_id, None)
            self._can_write(campaign_id)
        release_lock(self.client, collector_lease_key(campaign_id), self.consumer)

    def _finish_file(self, campaign_id: str, path: Path) -> None:
        if self._marked_if_taken(campaign_id, path):
            return
        if campaign_id not in self.unfinished:
            # A collector killed between the last line and `on_complete` left it undone.
            if path.exists():
                self._complete(path)
            return
        expected = self.expected_for(campaign_id)
        summary = summary_on_disk(path, campaign_id, expected, self.counting)
        summary.paid_again = paid_again(self.client, campaign_id)
        text = json.dumps(summary.as_json(), indent=2) + "\n"
        write_atomically(summary_path(path.parent, campaign_id), text)
        if expected is not None and summary.results >= expected:
            empty_stream(self.client, campaign_id)
            compact(self.client, campaign_id, summary.counts)
            self._complete(path)

    def _marked_if_taken(self, campaign_id: str, path: Path) -> bool:
        """Whether another collector's file is the campaign's (then `path` is marked partial)."""
        home = home_elsewhere(self.client, campaign_id, path)
        if home is None:
            return False
        self.unfinished.pop(campaign_id, None)
        self.opened.pop(campaign_id, None)
        marked = mark_partial(path, campaign_id)
        if marked is not None:
            log.warning(
                "collector %s: campaign %s was taken over, its file is %s; the part written "
                "here is kept as %s, and no report is made of it",
                self.consumer, campaign_id, home, marked,
            )  # fmt: skip
        return True

    def _cannot_write(self, campaign_id: str, path: Path, exc: OSError) -> None:
        """Stop writing the campaign (its results stay unacknowledged in the stream), say
        why in the log and in Redis, and try again after a while."""
        file = self.files.pop(campaign_id, None)
        if file is not None:
            with contextlib.suppress(OSError):
                file.write_summary()  # the lines on disk, which the file cut back to
            file.close()
        self.own_pending_read.discard(campaign_id)  # read them again from the stream
        error = describe(exc)
        trouble = self.troubles.get(campaign_id)
        if trouble is None or (trouble.path, trouble.error) != (path, error):
            log.warning(
                "collector %s: cannot write %s: %s; its results wait in Redis, trying again",
                self.consumer, path, error,
            )  # fmt: skip
            since = now_seconds(self.client)
            trouble = self.troubles[campaign_id] = DiskTrouble(path, error, since)
        trouble.failures += 1
        trouble.retry_at = time.monotonic() + DISK_RETRY.compute(trouble.failures)
        cannot_write(self.client, self.consumer, campaign_id, str(path), error, trouble.since)

    def _can_write(self, campaign_id: str) -> None:
        trouble = self.troubles.pop(campaign_id, None)
        if trouble is not None:
            log.warning(
                "collector %s: writes %s again after %.0f s",
                self.consumer, trouble.path, now_seconds(self.client) - trouble.since,
            )  # fmt: skip
            can_write(self.client, self.consumer, campaign_id)

    def _waiting(self, campaign_id: str) -> bool:
        trouble = self.troubles.get(campaign_id)
        return trouble is not None and time.monotonic() < trouble.retry_at

    def _pause(self, block_ms: int) -> float:
        """Until the next try of a file the disk refused, at most `block_ms`."""
        soonest = min((t.retry_at for t in self.troubles.values()), default=float("inf"))
        return max(0.01, min(block_ms / 1000, soonest - time.monotonic()))

    def _complete(self, path: Path) -> None:
        """A failure here (a report that cannot be written) is only logged: the results stand."""
        try:
            self.on_complete(path)
        except Exception:
            log.exception("could not finish %s", path)

    def _hold(self, campaign_id: str) -> bool:
        """Take or keep the campaign's collector lease; one collector writes a file at a time."""
        if time.monotonic() - self.held_at.get(campaign_id, -1e9) < COLLECTOR_LEASE_MS / 3000:
            return True
        held = self.client.eval(
            HOLD_COLLECTOR, 1, collector_lease_key(campaign_id), self.consumer, COLLECTOR_LEASE_MS
        )
        if not held and campaign_id in self.files:
            log.warning(
                "collector %s: campaign %s taken over by another collector",
                self.consumer,
                campaign_id,
            )
            self.files.pop(campaign_id).close()
        if not held and campaign_id in self.opened:
            self._marked_if_taken(campaign_id, self.opened[campaign_id])
        if held:
            self.held_at[campaign_id] = time.monotonic()
        return bool(held)

    def close(self) -> None:
        """Finish every open campaign; with Redis out of reach, just close the files (the
        lease lapses, and the lines not yet acknowledged are recorded at the next opening)."""
        try:
            for campaign_id in [*self.files, *(c for c in self.unfinished if c not in self.files)]:
                self.finish(campaign_id)
            for campaign_id, path in list(self.opened.items()):
                self._marked_if_taken(campaign_id, path)
            for campaign_id in list(self.troubles):
                can_write(self.client, self.consumer, campaign_id)  # no one tries any more
        except (redis.ConnectionError, redis.TimeoutError) as exc:
            log.warning("collector %s: Redis out of reach while closing (%s)", self.consumer, exc)
            self._let_go_of_files()

    def results_file(self, campaign_id: str) -> ResultsFile:
        if campaign_id not in self.files:
            file = ResultsFile(
                self.out_dir_for(campaign_id),
                campaign_id,
                self.expected_for(campaign_id),
                self.counting,
            )
            try:
                make_home(self.client, campaign_id, file, self.consumer)
            except BaseException:
                file.close()
                raise
            self.files[campaign_id] = file
            self.opened[campaign_id] = file.path
        return self.files[campaign_id]

    def _ensure_group(self, campaign_id: str) -> None:
        if campaign_id in self.groups:
            return
        try:
            self.client.xgroup_create(
                results_stream_key(campaign_id), COLLECTOR_GROUP, id="0", mkstream=True
            )
        except redis.ResponseError as exc:
            if "BUSYGROUP" not in str(exc):
                raise
        self.groups.add(campaign_id)

    def _own_pending(self, campaigns: list[str]) -> list[tuple[str, Entry]]:
        """After a restart under the same name, first finish what this consumer had read."""
        todo = [c for c in campaigns if c not in self.own_pending_read]
        if not todo:
            return []
        found = self._xread({results_stream_key(c): "0" for c in todo}, block_ms=None)
        if not found:
            self.own_pending_read.update(todo)
        return found

    def _claim_abandoned(self, campaigns: list[str]) -> list[tuple[str, Entry]]:
        claimed: list[tuple[str, Entry]] = []
        for campaign_id in campaigns:
            stream = results_stream_key(campaign_id)
            _, entries, _ = self.client.xautoclaim(
                stream, COLLECTOR_GROUP, self.consumer, min_idle_time=CLAIM_IDLE_MS, count=500
            )
            claimed += [(campaign_id, entry) for entry in entries if entry[1]]
        return claimed

    def _read_new(self, campaigns: list[str], block_ms: int) -> list[tuple[str, Entry]]:
        return self._xread({results_stream_key(c): ">" for c in campaigns}, block_ms)

    def _xread(self, streams: dict[str, str], block_ms: int | None) -> list[tuple[str, Entry]]:
        # RESP2 (redis-py's default): a list of [stream, entries] pairs.
        ids = cast(dict[Any, Any], streams)
        reply = cast(
            list[Any],
            self.client.xreadgroup(COLLECTOR_GROUP, self.consumer, ids, count=500, block=block_ms),
        )
        found = []
        for stream, entries in reply or []:
            campaign_id = stream.rsplit(":", 1)[-1]
            found += [(campaign_id, entry) for entry in entries if entry[1]]
        return found

    def _handle(self, entries: list[tuple[str, Entry]]) -> int:
        by_campaign: dict[str, list[tuple[str, dict[str, str], Result | None]]]
        by_campaign = defaultdict(list)
        for campaign_id, (entry_id, fields) in entries:
            by_campaign[campaign_id].append((entry_id, fields, _parse(fields)))
        written = 0
        for campaign_id, items in by_campaign.items():
            results = [r for _, _, r in items if r is not None]
            try:
                for result in results:
                    unpack_trial_files(self.client, self.out_dir_for(campaign_id), result)
                new = self.results_file(campaign_id).append(results)
            except OSError as exc:
                path = results_path(self.out_dir_for(campaign_id), campaign_id)
                self._cannot_write(campaign_id, path, exc)
                continue
            self._can_write(campaign_id)
            written += len(new)
            self._acknowledge(campaign_id, [entry_id for entry_id, _, _ in items], new)
            self._checkpoint(
                campaign_id,
                [(entry_id, fields["result"] if r else None) for entry_id, fields, r in items],
            )
        return written

    def _checkpoint(self, campaign_id: str, acknowledged: list[tuple[str, str | None]]) -> None:
        """Out of the stream, `CHECKPOINT_ENTRIES` at a time, what is safe in the file."""
        waiting = self.acknowledged[campaign_id]
        waiting += acknowledged
        if len(waiting) >= CHECKPOINT_ENTRIES:
            move_to_checkpoint(self.client, campaign_id, waiting)
            del self.acknowledged[campaign_id]

    def _acknowledge(self, campaign_id: str, entry_ids: list[str], new: list[Result]) -> None:
        stream = results_stream_key(campaign_id)
        pipe = self.client.pipeline(transaction=True)
        count(self.client, campaign_id, {r.job_id: r.status.value for r in new}, 1, pipe)
        pipe.xack(stream, COLLECTOR_GROUP, *entry_ids)
        pipe.execute()

    def _maybe_write_summaries(self, force: bool = False) -> None:
        if force or time.monotonic() - self.summary_written >= self.summary_interval:
            began = time.monotonic()
            for campaign_id, file in list(self.files.items()):
                try:
                    file.write_summary()
                except OSError as exc:
                    self._cannot_write(campaign_id, file.summary_path, exc)
            self.summary_written = time.monotonic()
            took = self.summary_written - began
            self.summary_interval = max(SUMMARY_INTERVAL_SECONDS, took / SUMMARY_SHARE)


def hold_lease(client: redis.Redis, campaign_id: str, holder: str) -> bool:
    """Take the campaign's collector lease for `holder` (not a collector: `retry`, which
    rewrites the file), unless a collector holds it; False when one does."""
    held = client.eval(
        HOLD_COLLECTOR, 1, collector_lease_key(campaign_id), holder, COLLECTOR_LEASE_MS
    )
    return bool(held)


def release_lease(client: redis.Redis, campaign_id: str, holder: str) -> None:
    release_lock(client, collector_lease_key(campaign_id), holder)


def collectors_of(client: redis.Redis, campaign_ids: Sequence[str]) -> dict[str, str | None]:
    """The collector polling each campaign now (its lease holder), or None: nobody writes
    that campaign's results, which then wait in Redis."""
    keys = [collector_lease_key(c) for c in campaign_ids]
    holders = cast(list[str | None], client.mget(keys)) if keys else []
    return dict(zip(campaign_ids, holders, strict=True))


def _parse(fields: dict[str, str]) -> Result | None:
    try:
        return Result.model_validate_json(fields["result"])
    except (KeyError, ValidationError):
        log.error("collector: dropping an unreadable stream entry for job %s", fields.get("job_id"))
        return None

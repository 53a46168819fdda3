"""The collector: results from Redis streams into JSONL files, each job exactly once.

It reads each campaign's stream through one consumer group. An entry is acknowledged
only after its line is fsynced; entries left pending by a collector that died are
claimed by another after `CLAIM_IDLE_MS`. Duplicates (a job delivered twice, an entry
read twice) are dropped against the ids already in the file.

One collector at a time writes a campaign (its collector lease). Entries stay in the
stream until the campaign's file is complete, so a collector taking a campaign over on
another host, or into another folder, first copies into its file what the one before
wrote (`bridge.results.collected`): the file a campaign ends with is whole.
"""

from __future__ import annotations

import logging
import time
from collections import defaultdict
from collections.abc import Callable
from pathlib import Path
from typing import Any, cast

import redis
from pydantic import ValidationError

from bridge.keys import COLLECTOR_GROUP, collector_lease_key, results_stream_key
from bridge.results.collected import count, empty_stream, make_home
from bridge.results.result import Result
from bridge.results.results_file import ResultsFile, results_path

log = logging.getLogger(__name__)

CLAIM_IDLE_MS = 30_000
"""An entry unacknowledged this long belongs to a dead collector and may be taken over."""

SUMMARY_INTERVAL_SECONDS = 1.0

CLAIM_INTERVAL_SECONDS = 5.0
"""How often to look for entries abandoned by dead collectors."""

COLLECTOR_LEASE_MS = 30_000
"""A collector that has not polled a campaign for this long loses it to another."""

_HOLD = """
local holder = redis.call('GET', KEYS[1])
if holder == false or holder == ARGV[1] then
  redis.call('SET', KEYS[1], ARGV[1], 'PX', ARGV[2])
  return 1
end
return 0
"""

_RELEASE = """
if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('DEL', KEYS[1]) end
return 0
"""

Entry = tuple[str, dict[str, str]]

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
    ) -> None:
        """`on_complete` gets the JSONL path of each complete campaign this collector finishes,
        maybe more than once (the commands pass the HTML report writer, which writes only a
        missing or stale report; results know nothing of reports)."""
        self.client = client
        self.consumer = consumer
        self.out_dir_for = out_dir_for
        self.expected_for = expected_for
        self.on_complete = on_complete
        self.files: dict[str, ResultsFile] = {}
        self.own_pending_read: set[str] = set()
        self.summary_written = 0.0
        self.groups: set[str] = set()
        self.held_at: dict[str, float] = {}
        self.claimed_at = 0.0

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
        campaigns = [c for c in campaigns if self._hold(c)]
        if not campaigns:
            time.sleep(block_ms / 1000)
            return 0
        for campaign_id in campaigns:
            self._ensure_group(campaign_id)
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

    def _let_go_of_files(self) -> None:
        for file in self.files.values():
            file.close()
        self.files.clear()
        self.held_at.clear()
        self.own_pending_read.clear()

    def finish(self, campaign_id: str) -> None:
        """Write the campaign's final summary, close its file, and let other collectors have it."""
        file = self.files.pop(campaign_id, None)
        if file is not None:
            file.write_summary()
            file.close()
            expected = file.summary.expected
            if expected is not None and file.summary.results >= expected:
                empty_stream(self.client, campaign_id)
                self._complete(file.path)
        else:
            # A collector killed between the last line and `on_complete` left it undone.
            path = results_path(self.out_dir_for(campaign_id), campaign_id)
            if path.exists():
                self._complete(path)
        self.held_at.pop(campaign_id, None)
        self.client.eval(_RELEASE, 1, collector_lease_key(campaign_id), self.consumer)

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
            _HOLD, 1, collector_lease_key(campaign_id), self.consumer, COLLECTOR_LEASE_MS
        )
        if not held and campaign_id in self.files:
            log.warning(
                "collector %s: campaign %s taken over by another collector",
                self.consumer,
                campaign_id,
            )
            self.files.pop(campaign_id).close()
        if held:
            self.held_at[campaign_id] = time.monotonic()
        return bool(held)

    def close(self) -> None:
        """Finish every open campaign; with Redis out of reach, just close the files (the
        lease lapses, and the lines not yet acknowledged are recorded at the next opening)."""
        try:
            for campaign_id in list(self.files):
                self.finish(campaign_id)
        except (redis.ConnectionError, redis.TimeoutError) as exc:
            log.warning("collector %s: Redis out of reach while closing (%s)", self.consumer, exc)
            self._let_go_of_files()

    def results_file(self, campaign_id: str) -> ResultsFile:
        if campaign_id not in self.files:
            file = ResultsFile(
                self.out_dir_for(campaign_id), campaign_id, self.expected_for(campaign_id)
            )
            try:
                make_home(self.client, campaign_id, file, self.consumer)
            except BaseException:
                file.close()
                raise
            self.files[campaign_id] = file
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
        by_campaign: dict[str, list[tuple[str, Result | None]]] = defaultdict(list)
        for campaign_id, (entry_id, fields) in entries:
            by_campaign[campaign_id].append((entry_id, _parse(fields)))
        written = 0
        for campaign_id, items in by_campaign.items():
            results = [r for _, r in items if r is not None]
            new = self.results_file(campaign_id).append(results)
            written += len(new)
            self._acknowledge(campaign_id, [entry_id for entry_id, _ in items], new)
        return written

    def _acknowledge(self, campaign_id: str, entry_ids: list[str], new: list[Result]) -> None:
        stream = results_stream_key(campaign_id)
        pipe = self.client.pipeline(transaction=True)
        count(self.client, campaign_id, {r.job_id: r.status.value for r in new}, 1, pipe)
        pipe.xack(stream, COLLECTOR_GROUP, *entry_ids)
        pipe.execute()

    def _maybe_write_summaries(self, force: bool = False) -> None:
        if force or time.monotonic() - self.summary_written >= SUMMARY_INTERVAL_SECONDS:
            for file in self.files.values():
                file.write_summary()
            self.summary_written = time.monotonic()


def _parse(fields: dict[str, str]) -> Result | None:
    try:
        return Result.model_validate_json(fields["result"])
    except (KeyError, ValidationError):
        log.error("collector: dropping an unreadable stream entry for job %s", fields.get("job_id"))
        return None

"""A complete campaign leaves a compact record in Redis; `reopen` brings back its record
per job from the file, for `retry`."""

from __future__ import annotations

from pathlib import Path

import redis

from evalrelay.bridge.keys import (
    campaign_key,
    collected_key,
    compacted_key,
    counts_key,
    done_key,
    job_key,
    results_home_key,
)
from evalrelay.bridge.queue.campaigns import progress, store_jobs
from evalrelay.bridge.results.collector import Collector
from evalrelay.bridge.results.manifest import manifest_record
from evalrelay.bridge.results.result import Status
from evalrelay.bridge.results.retention import RETENTION_SECONDS, is_compacted, reopen
from tests.bridge.queue.test_campaigns import add_campaign
from tests.bridge.results.test_collector import add, result
from tests.conftest import direct_job


def complete_campaign(client: redis.Redis, out: Path) -> Collector:
    """Campaign `c` of three jobs, each stored with its `done` mark, all collected."""
    add_campaign(client, "c", total=3, out_dir=str(out))
    store_jobs(client, [direct_job(job_id=j) for j in ("a", "b", "d")])
    for job_id in ("a", "b", "d"):
        client.hset(done_key("c", job_id), job_id, "1")
    collector = Collector(client, "first", lambda _: out, lambda _: 3)
    add(client, result("a"), result("b", Status.TIMEOUT), result("d"))
    collector.poll(["c"], block_ms=100)
    collector.finish("c")
    return collector


def test_a_complete_campaign_keeps_only_its_record(client: redis.Redis, tmp_path: Path) -> None:
    complete_campaign(client, tmp_path)
    assert is_compacted(client, "c")
    for job_id in ("a", "b", "d"):
        assert not client.exists(job_key(job_id), done_key("c", job_id))
    assert not client.exists(*manifest_record("c"), collected_key("c"))
    assert client.hgetall(counts_key("c")) == {"ok": "2", "timeout": "1"}
    for key in (campaign_key("c"), compacted_key("c"), counts_key("c"), results_home_key("c")):
        assert 0 < client.ttl(key) <= RETENTION_SECONDS, key
    state = progress(client, "c")
    assert (state.finished, state.done, state.total) == (True, 3, 3)


def test_reopen_reads_the_record_per_job_back_from_the_file(
    client: redis.Redis, tmp_path: Path
) -> None:
    complete_campaign(client, tmp_path)
    reopen(client, "c", tmp_path / "c.jsonl")
    assert not is_compacted(client, "c")
    assert client.smembers(collected_key("c")) == {"a", "b", "d"}
    assert client.hgetall(counts_key("c")) == {"ok": "2", "timeout": "1"}
    assert progress(client, "c").finished


def test_a_late_duplicate_of_a_compacted_campaign_is_left_unread(
    client: redis.Redis, tmp_path: Path
) -> None:
    """Redis no longer knows which jobs the file holds: reading the duplicate would count
    the whole file again."""
    collector = complete_campaign(client, tmp_path)
    add(client, result("a"))
    assert collector.poll(["c"], block_ms=100) == 0
    assert len((tmp_path / "c.jsonl").read_text().splitlines()) == 3
    assert client.hgetall(counts_key("c")) == {"ok": "2", "timeout": "1"}


def test_the_record_counts_what_the_file_holds_whatever_counts_drifted(
    client: redis.Redis, tmp_path: Path
) -> None:
    """A collector cut off whose acknowledgement reaches Redis late counts its results a
    second time; a complete campaign's record says what its file holds."""
    complete_campaign(client, tmp_path)
    client.hincrby(counts_key("c"), "ok", 2)  # the late acknowledgement
    state = progress(client, "c")
    assert (state.done, state.total, state.counts) == (3, 3, {"ok": 2, "timeout": 1})

"""Results leave the stream once their lines are fsynced, into a compressed checkpoint that
a collector taking the campaign over into another file copies from."""

from __future__ import annotations

from pathlib import Path

import pytest
import redis

from evalrelay.bridge.keys import checkpoint_key, results_stream_key
from evalrelay.bridge.results import collector as collector_module
from evalrelay.bridge.results.checkpoint import checkpointed
from evalrelay.bridge.results.collected import results_home
from evalrelay.bridge.results.collector import Collector
from evalrelay.bridge.results.results_file import read_results
from tests.bridge.results.test_collector import add, result


@pytest.fixture(autouse=True)
def small_checkpoints(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(collector_module, "CHECKPOINT_ENTRIES", 3)


def collector(client: redis.Redis, out: Path, name: str, expected: int | None) -> Collector:
    return Collector(client, name, lambda _: out, lambda _: expected)


def test_results_safe_in_the_file_leave_the_stream_while_the_campaign_runs(
    client: redis.Redis, tmp_path: Path
) -> None:
    first = collector(client, tmp_path, "first", expected=10)
    add(client, result("j0"), result("j1"))
    assert first.poll(["c"], block_ms=100) == 2
    assert client.xlen(results_stream_key("c")) == 2  # fewer than a segment's worth
    add(client, *(result(f"j{i}") for i in range(2, 7)))
    assert first.poll(["c"], block_ms=100) == 5
    assert client.xlen(results_stream_key("c")) == 0
    assert client.llen(checkpoint_key("c")) == 1
    assert sorted(r.split('"job_id":"')[1][:2] for r in checkpointed(client, "c")) == [
        f"j{i}" for i in range(7)
    ]


def test_a_takeover_into_another_folder_copies_the_checkpointed_results(
    client: redis.Redis, tmp_path: Path
) -> None:
    first = collector(client, tmp_path / "first", "first", expected=9)
    add(client, *(result(f"j{i}") for i in range(7)))
    first.poll(["c"], block_ms=100)
    first.close()  # as if its lease lapsed: the first host is gone
    assert client.xlen(results_stream_key("c")) == 0  # all seven are in the checkpoint
    second = collector(client, tmp_path / "second", "second", expected=9)
    add(client, result("j7"), result("j8"))
    assert second.poll(["c"], block_ms=100) == 2
    second.finish("c")
    lines = sorted(r.job_id for r in read_results(tmp_path / "second" / "c.jsonl"))
    assert lines == [f"j{i}" for i in range(9)]
    assert results_home(client, "c").collector == "second"
    # Complete: neither the stream nor the checkpoint keeps anything.
    assert client.xlen(results_stream_key("c")) == 0
    assert not client.exists(checkpoint_key("c"))

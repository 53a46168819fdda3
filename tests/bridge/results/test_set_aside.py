"""Setting lines aside for `retry`: out of the file, Redis's record and the result stream."""

from __future__ import annotations

from pathlib import Path

import redis

from evalrelay.bridge.keys import collected_key, counts_key
from evalrelay.bridge.results.collector import Collector
from evalrelay.bridge.results.result import Status
from evalrelay.bridge.results.results_file import read_results
from evalrelay.bridge.results.set_aside import set_aside
from tests.bridge.results.test_collector import add, result


def test_a_takeover_after_a_retry_copies_the_new_attempt_not_the_one_set_aside(
    client: redis.Redis, tmp_path: Path
) -> None:
    first = Collector(client, "first", lambda _: tmp_path / "first", lambda _: 3)
    add(client, result("a", Status.INFRA_ERROR), result("b"))
    assert first.poll(["c"], block_ms=100) == 2
    first.files.pop("c").close()  # between two writes, as the collector does it

    moved = set_aside(client, "c", tmp_path / "first" / "c.jsonl", {Status.INFRA_ERROR})
    assert [(r.job_id, r.attempt) for r in moved] == [("a", 1)]
    assert client.smembers(collected_key("c")) == {"b"}
    assert client.hgetall(counts_key("c")) == {"ok": "1", "infra_error": "0"}
    aside = tmp_path / "first" / "c.attempts.jsonl"
    assert [r.job_id for r in read_results(aside)] == ["a"]

    again = result("a").model_copy(update={"attempt": 2})
    add(client, again)
    assert first.poll(["c"], block_ms=100) == 1
    first.close()  # its host is gone; another collector takes the campaign over
    second = Collector(client, "second", lambda _: tmp_path / "second", lambda _: 3)
    add(client, result("d"))
    second.poll(["c"], block_ms=100)
    second.close()
    lines = {r.job_id: r for r in read_results(tmp_path / "second" / "c.jsonl")}
    assert sorted(lines) == ["a", "b", "d"]
    assert (lines["a"].attempt, lines["a"].status) == (2, Status.OK)


def test_nothing_chosen_leaves_the_file_untouched(client: redis.Redis, tmp_path: Path) -> None:
    first = Collector(client, "first", lambda _: tmp_path, lambda _: None)
    add(client, result("a"))
    first.poll(["c"], block_ms=100)
    first.close()
    assert set_aside(client, "c", tmp_path / "c.jsonl", {Status.TIMEOUT}) == []
    assert not (tmp_path / "c.attempts.jsonl").exists()
    assert client.smembers(collected_key("c")) == {"a"}

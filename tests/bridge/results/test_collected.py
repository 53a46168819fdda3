"""Redis's record of a campaign's file: never shrunk by opening another file, and the file a
campaign ends with is whole, whichever collector wrote which part of it."""

from __future__ import annotations

import socket
from pathlib import Path

import redis

from evalrelay.bridge.delivery.payloads import jobs_of
from evalrelay.bridge.keys import collected_key, counts_key, done_key, job_key, results_stream_key
from evalrelay.bridge.queue.campaigns import store_jobs
from evalrelay.bridge.results.collected import file_here, forget_results, results_home
from evalrelay.bridge.results.collector import Collector
from evalrelay.bridge.results.result import Status
from evalrelay.bridge.results.results_file import read_results
from tests.bridge.results.test_collector import add, result
from tests.conftest import direct_job


def collector(client: redis.Redis, out: Path, name: str, expected: int | None = None) -> Collector:
    return Collector(client, name, lambda _: out, lambda _: expected)


def test_a_takeover_into_another_folder_copies_what_the_first_collector_wrote(
    client: redis.Redis, tmp_path: Path
) -> None:
    first = collector(client, tmp_path / "first", "first", expected=4)
    add(client, result("a"), result("b", Status.TIMEOUT))
    assert first.poll(["c"], block_ms=100) == 2
    first.close()  # as if its lease lapsed: the first host is gone
    assert results_home(client, "c").path == str(tmp_path / "first" / "c.jsonl")

    second = collector(client, tmp_path / "second", "second", expected=4)
    add(client, result("c"), result("d"))
    assert second.poll(["c"], block_ms=100) == 2
    second.finish("c")
    lines = [r.job_id for r in read_results(tmp_path / "second" / "c.jsonl")]
    assert sorted(lines) == ["a", "b", "c", "d"]
    assert client.hgetall(counts_key("c")) == {"ok": "3", "timeout": "1"}
    home = results_home(client, "c")
    assert (home.host, home.collector) == (socket.gethostname(), "second")
    assert client.xlen(results_stream_key("c")) == 0  # complete: the stream is emptied


def test_opening_an_empty_file_elsewhere_never_takes_results_out_of_redis(
    client: redis.Redis, tmp_path: Path
) -> None:
    """`resume` on a host without the file must not reset the campaign to zero from it."""
    first = collector(client, tmp_path / "first", "first")
    add(client, result("a"), result("b"))
    first.poll(["c"], block_ms=100)
    first.close()
    client.xtrim(results_stream_key("c"), maxlen=0)  # as after a complete file
    other = collector(client, tmp_path / "other", "other")
    other.poll(["c"], block_ms=100)
    other.close()
    assert client.smembers(collected_key("c")) == {"a", "b"}
    assert client.hgetall(counts_key("c")) == {"ok": "2"}


def test_a_file_is_here_only_on_its_host(client: redis.Redis, tmp_path: Path) -> None:
    default = tmp_path / "default" / "c.jsonl"
    assert file_here(client, "c", default) == default  # no file yet: where it will be
    first = collector(client, tmp_path / "out", "first")
    add(client, result("a"))
    first.poll(["c"], block_ms=100)
    first.close()
    assert file_here(client, "c", default) == tmp_path / "out" / "c.jsonl"
    home = results_home(client, "c")
    client.set(
        "evalrelay:campaign:c:results-home",
        home.model_copy(update={"host": "elsewhere"}).model_dump_json(),
    )
    assert file_here(client, "c", default) is None


def test_forgetting_results_takes_them_out_of_the_record(
    client: redis.Redis, tmp_path: Path
) -> None:
    first = collector(client, tmp_path, "first")
    add(client, result("a"), result("b", Status.TIMEOUT))
    first.poll(["c"], block_ms=100)
    first.close()
    forget_results(client, "c", [result("b", Status.TIMEOUT)])
    assert client.smembers(collected_key("c")) == {"a"}
    assert client.hgetall(counts_key("c")) == {"ok": "1", "timeout": "0"}


def test_a_job_collected_ok_loses_its_stored_copy_and_keeps_its_done_mark(
    client: redis.Redis, tmp_path: Path
) -> None:
    """What may still run keeps its stored copy (a failure, for `retry`); a job collected
    `ok` is finished: a late copy of it finds nothing to run, and its `done` mark stays
    for a copy already running."""
    store_jobs(client, [direct_job(campaign_id="c", job_id=j) for j in ("a", "b", "q")])
    client.hset(done_key("c", "a"), "a", 1)
    client.hset(done_key("c", "b"), "b", 1)
    first = collector(client, tmp_path, "first")
    add(client, result("a"), result("b", Status.TIMEOUT))
    first.poll(["c"], block_ms=100)
    first.close()
    assert not client.exists(job_key("a"))
    assert client.exists(job_key("b"), job_key("q")) == 2
    assert client.hget(done_key("c", "a"), "a") == client.hget(done_key("c", "b"), "b") == "1"
    late, failed, waiting = jobs_of(client, [{"job_id": j, "attempt": 1} for j in "abq"])
    assert late is None and failed is not None and waiting is not None

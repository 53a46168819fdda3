"""The collector: every result written once, across duplicates, crashes and restarts."""

from __future__ import annotations

import json
import os
import resource
import signal
import socket
import subprocess
import sys
import threading
import time
from datetime import UTC, datetime
from pathlib import Path

import pytest
import redis

from evalrelay.bridge.evalfile.cases import load_eval_file
from evalrelay.bridge.keys import (
    COLLECTOR_GROUP,
    collected_key,
    collector_lease_key,
    counts_key,
    paid_again_key,
    results_stream_key,
)
from evalrelay.bridge.planning.campaigns import plan_jobs
from evalrelay.bridge.prompt.request import PromptRequest
from evalrelay.bridge.queue.campaigns import CampaignInfo, announce, store_jobs
from evalrelay.bridge.queue.celery_queue import JobQueue
from evalrelay.bridge.results import collector as collector_module
from evalrelay.bridge.results.collector import SUMMARY_SHARE, Collector, collectors_of
from evalrelay.bridge.results.result import Result, Status
from evalrelay.bridge.results.results_file import ResultsFile, read_results
from evalrelay.bridge.results.write_errors import write_errors
from tests.conftest import (
    PrivateRedis,
    Processes,
    WriteFiles,
    one_turn_cases,
    read_jsonl,
    wait_for,
)
from tests.worker.test_tasks import submit_campaign

ECHO_TARGET = "targets:\n  - {name: echo, provider: mock, echo: true}\n"


def result(job_id: str, status: Status = Status.OK, campaign: str = "c") -> Result:
    now = datetime.now(UTC)
    return Result(
        campaign_id=campaign,
        job_id=job_id,
        case_id=job_id,
        dataset="d",
        target="t",
        status=status,
        raw_request=PromptRequest(question="q"),
        started_at=now,
        finished_at=now,
        duration_ms=1,
        worker="w",
    )


def add(client: redis.Redis, *results: Result) -> None:
    for r in results:
        client.xadd(
            results_stream_key(r.campaign_id), {"job_id": r.job_id, "result": r.model_dump_json()}
        )


def open_on(path: Path) -> int:
    """How many of this process's file descriptors are open on `path`."""
    fds = Path("/proc/self/fd")
    return sum(1 for fd in fds.iterdir() if os.path.realpath(fd) == str(path.resolve()))


def make_collector(client: redis.Redis, out: Path, name: str = "c1") -> Collector:
    return Collector(client, name, lambda _: out, lambda _: None)


def test_results_are_written_once_and_counted(client: redis.Redis, tmp_path: Path) -> None:
    collector = make_collector(client, tmp_path)
    add(client, result("a"), result("b", Status.TIMEOUT), result("a"))
    assert collector.poll(["c"], block_ms=100) == 2
    collector.close()
    assert [r.job_id for r in read_results(tmp_path / "c.jsonl")] == ["a", "b"]
    assert client.hgetall(counts_key("c")) == {"ok": "1", "timeout": "1"}
    assert client.smembers(collected_key("c")) == {"a", "b"}
    # Kept until the campaign's file is complete: a collector on another host may need them.
    assert client.xlen(results_stream_key("c")) == 3


def test_restart_after_write_before_ack_writes_nothing_twice(
    client: redis.Redis, tmp_path: Path
) -> None:
    """A crash after fsync but before XACK: the entry is read again, the file already has it."""
    ResultsFile(tmp_path, "c").append([result("a")])
    add(client, result("a"), result("b"))
    collector = make_collector(client, tmp_path)
    assert collector.poll(["c"], block_ms=100) == 1
    collector.close()
    assert [r.job_id for r in read_results(tmp_path / "c.jsonl")] == ["a", "b"]
    assert client.hgetall(counts_key("c")) == {"ok": "2"}


def test_torn_last_line_is_dropped_on_open(tmp_path: Path) -> None:
    path = tmp_path / "c.jsonl"
    path.write_text(result("a").model_dump_json() + "\n" + result("b").model_dump_json()[:40])
    file = ResultsFile(tmp_path, "c")
    assert set(file.job_ids) == {"a"}
    file.append([result("b")])
    file.close()
    assert [r.job_id for r in read_results(path)] == ["a", "b"]


def test_entries_of_a_dead_collector_are_claimed(
    client: redis.Redis, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    add(client, result("a"), result("b"))
    client.xgroup_create(results_stream_key("c"), COLLECTOR_GROUP, id="0")
    client.xreadgroup(COLLECTOR_GROUP, "dead", {results_stream_key("c"): ">"})  # never acks
    monkeypatch.setattr(collector_module, "CLAIM_IDLE_MS", 50)
    wait_for(
        lambda: all(
            p["time_since_delivered"] > 50
            for p in client.xpending_range(results_stream_key("c"), COLLECTOR_GROUP, "-", "+", 10)
        ),
        10,
        "the dead collector's entries to be idle past CLAIM_IDLE_MS",
    )
    collector = make_collector(client, tmp_path, name="alive")
    assert collector.poll(["c"], block_ms=100) == 2
    collector.close()
    assert client.xpending(results_stream_key("c"), COLLECTOR_GROUP)["pending"] == 0


def test_restarted_collector_first_finishes_its_own_pending_entries(
    client: redis.Redis, tmp_path: Path
) -> None:
    add(client, result("a"))
    client.xgroup_create(results_stream_key("c"), COLLECTOR_GROUP, id="0")
    client.xreadgroup(COLLECTOR_GROUP, "same", {results_stream_key("c"): ">"})
    collector = make_collector(client, tmp_path, name="same")
    assert collector.poll(["c"], block_ms=100) == 1
    collector.close()


def test_one_collector_at_a_time_writes_a_campaign(client: redis.Redis, tmp_path: Path) -> None:
    first = make_collector(client, tmp_path / "first", name="first")
    second = make_collector(client, tmp_path / "second", name="second")
    add(client, result("a"))
    assert first.poll(["c"], block_ms=50) == 1
    add(client, result("b"))
    assert second.poll(["c"], block_ms=50) == 0  # the campaign is first's
    first.finish("c")
    assert second.poll(["c"], block_ms=50) == 1
    add(client, result("c2"))
    assert first.poll(["c"], block_ms=50) == 0  # it let go at its finish: now second's
    assert second.poll(["c"], block_ms=50) == 1
    second.close()
    assert not (tmp_path / "first" / "c.jsonl").read_text().count('"b"')
    assert [r.job_id for r in read_results(tmp_path / "first" / "c.jsonl")] == ["a"]
    # The second took it over: its file is whole, with the line the first wrote.
    assert [r.job_id for r in read_results(tmp_path / "second" / "c.jsonl")] == ["a", "b", "c2"]


def test_a_stream_deleted_while_the_collector_waits_on_it_is_read_anew(
    client: redis.Redis, tmp_path: Path
) -> None:
    """FLUSHDB or a Redis that lost its data while XREADGROUP blocks answers `UNBLOCKED`."""
    collector = Collector(client, "c1", lambda _: tmp_path)
    assert collector.poll(["c"], block_ms=10) == 0  # the group exists, nothing to read
    outcome: list[object] = []

    def blocked_read() -> None:
        try:
            outcome.append(collector.poll(["c"], block_ms=5000))
        except redis.RedisError as exc:
            outcome.append(exc)

    reader = threading.Thread(target=blocked_read)
    reader.start()
    wait_for(lambda: client.info("clients")["blocked_clients"] >= 1, 10, "the read to block")
    client.delete(results_stream_key("c"))
    reader.join(10)
    assert outcome == [0]
    client.xadd(results_stream_key("c"), {"job_id": "j1", "result": result("j1").model_dump_json()})
    wait_for(lambda: collector.poll(["c"], block_ms=100) == 1, 10, "the new result")
    collector.close()


def test_finish_counts_the_lines_on_disk_and_trims_only_a_whole_file(
    client: redis.Redis, tmp_path: Path
) -> None:
    """The in-memory count says 2; the disk lost the last line's end: the summary says 1,
    and the results stay in Redis for the collector that completes the file."""
    collector = Collector(client, "c1", lambda _: tmp_path, lambda _: 2)
    add(client, result("a"), result("b"))
    assert collector.poll(["c"], block_ms=100) == 2
    path = tmp_path / "c.jsonl"
    with path.open("rb+") as handle:
        handle.truncate(path.stat().st_size - 10)
    collector.finish("c")
    assert json.loads((tmp_path / "c.summary.json").read_text())["results"] == 1
    assert client.xlen(results_stream_key("c")) == 2


def test_a_folder_the_disk_refuses_keeps_results_in_redis_until_it_takes_them(
    client: redis.Redis, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """A file stands where the results folder should be: a real refusal of the system's
    (EEXIST), which lasts until the file is moved away."""
    blocker = tmp_path / "out"
    blocker.write_text("a file where the results folder should be")
    collector = make_collector(client, blocker)
    add(client, result("a"), result("b"))
    assert collector.poll(["c"], block_ms=100) == 0
    (said,) = write_errors(client)
    assert (said.collector, said.campaign_id) == ("c1", "c")
    assert said.path == str(blocker / "c.jsonl") and said.error.endswith("(EEXIST)")
    assert client.xpending(results_stream_key("c"), COLLECTOR_GROUP)["pending"] == 2
    # The first try again comes after DISK_RETRY's first pause (1 s), not at once.
    assert 0.5 < collector.troubles["c"].retry_at - time.monotonic() <= 1.0
    started = time.monotonic()
    assert collector.poll(["c"], block_ms=5000) == 0  # waiting: the disk is not tried
    assert time.monotonic() - started < 4  # the poll waits until the next try, not 5 s
    wait_for(
        lambda: collector.poll(["c"], block_ms=100) == 0 and collector.troubles["c"].failures == 2,
        10,
        "the second try",
    )
    assert write_errors(client)[0].since == said.since  # the same error, still going
    assert caplog.text.count("cannot write") == 1  # said once while it lasts
    blocker.unlink()
    assert collector.poll(["c"], block_ms=100) == 0  # the next try is 2 s after the second
    wait_for(lambda: collector.poll(["c"], block_ms=100) == 2, 10, "the lines written")
    assert write_errors(client) == [] and collector.troubles == {}
    assert f"collector c1: writes {blocker / 'c.jsonl'} again after " in caplog.text
    assert client.xpending(results_stream_key("c"), COLLECTOR_GROUP)["pending"] == 0
    collector.close()
    assert [r.job_id for r in read_results(blocker / "c.jsonl")] == ["a", "b"]


def test_an_unreadable_entry_is_dropped_said_and_acknowledged(
    client: redis.Redis, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    client.xadd(results_stream_key("c"), {"job_id": "torn", "result": '{"campaign_id": "c"'})
    client.xadd(results_stream_key("c"), {"job_id": "nameless"})
    add(client, result("a"))
    collector = make_collector(client, tmp_path)
    assert collector.poll(["c"], block_ms=100) == 1
    collector.close()
    assert [r.job_id for r in read_results(tmp_path / "c.jsonl")] == ["a"]
    assert "dropping an unreadable stream entry for job torn" in caplog.text
    assert "dropping an unreadable stream entry for job nameless" in caplog.text
    assert client.xpending(results_stream_key("c"), COLLECTOR_GROUP)["pending"] == 0


def test_a_complete_campaign_is_finished_once_its_file_holds_every_result(
    client: redis.Redis, tmp_path: Path
) -> None:
    """Its summary is written, its stream emptied, `on_complete` given its file, and its
    collector lease let go of; a finish after a kill before `on_complete` completes it again."""
    completed: list[Path] = []
    collector = Collector(client, "c1", lambda _: tmp_path, lambda _: 2, completed.append)
    add(client, result("a"), result("b", Status.TIMEOUT))
    assert collector.poll(["c"], block_ms=100) == 2
    assert client.get(collector_lease_key("c")) == "c1"
    assert 0 < client.pttl(collector_lease_key("c")) <= collector_module.COLLECTOR_LEASE_MS
    collector.finish("c")
    assert completed == [tmp_path / "c.jsonl"]
    assert open_on(tmp_path / "c.jsonl") == 0
    assert collector.poll([], block_ms=10) == 0
    assert completed == [tmp_path / "c.jsonl"]  # finished once, not at every poll
    summary = json.loads((tmp_path / "c.summary.json").read_text())
    assert (summary["results"], summary["counts"]) == (2, {"ok": 1, "timeout": 1})
    assert summary["paid_again"] == {}
    assert client.xlen(results_stream_key("c")) == 0
    assert client.get(collector_lease_key("c")) is None
    (tmp_path / "c.summary.json").unlink()
    Collector(client, "next", lambda _: tmp_path, lambda _: 2, completed.append).finish("c")
    assert completed == [tmp_path / "c.jsonl"] * 2  # its file is there: completed again
    assert not (tmp_path / "c.summary.json").exists()  # and nothing else: it wrote no line
    empty = tmp_path / "none"
    Collector(client, "empty", lambda _: empty, lambda _: 2, completed.append).finish("c")
    assert completed == [tmp_path / "c.jsonl"] * 2
    assert not empty.exists()


def test_the_summary_says_what_the_campaign_paid_for_twice(
    client: redis.Redis, tmp_path: Path
) -> None:
    """The calls the workers counted past one per job (`bridge.results.paid`), by why."""
    client.hset(paid_again_key("c"), mapping={"duplicate": 2, "retry": 1})
    collector = Collector(client, "c1", lambda _: tmp_path, lambda _: 1, lambda _: None)
    add(client, result("a"))
    collector.poll(["c"], block_ms=100)
    collector.finish("c")
    summary = json.loads((tmp_path / "c.summary.json").read_text())
    assert summary["paid_again"] == {"duplicate": 2, "retry": 1}


def test_a_summary_the_disk_refuses_at_the_finish_is_written_at_a_later_poll(
    client: redis.Redis, tmp_path: Path
) -> None:
    """A folder stands where the summary goes (a real refusal: a file cannot replace it);
    the campaign stays unfinished, its error said, until the summary is written."""
    collector = make_collector(client, tmp_path)
    add(client, result("a"))
    assert collector.poll(["c"], block_ms=50) == 1
    summary = tmp_path / "c.summary.json"
    summary.unlink()
    summary.mkdir()
    collector.finish("c")
    (said,) = write_errors(client)
    assert said.path == str(tmp_path / "c.jsonl")
    assert collector.poll([], block_ms=50) == 0
    assert collector.troubles["c"].failures == 1  # not tried again before its time
    summary.rmdir()
    wait_for(lambda: collector.poll([], block_ms=50) == 0 and summary.is_file(), 10, "the summary")
    assert json.loads(summary.read_text())["results"] == 1
    assert write_errors(client) == []


def test_a_collector_closing_writes_a_summary_its_finish_could_not(
    client: redis.Redis, tmp_path: Path
) -> None:
    collector = make_collector(client, tmp_path)
    add(client, result("a"))
    assert collector.poll(["c"], block_ms=50) == 1
    summary = tmp_path / "c.summary.json"
    summary.unlink()
    summary.mkdir()
    collector.finish("c")
    summary.rmdir()
    collector.close()  # without waiting for the next try
    assert json.loads(summary.read_text())["results"] == 1
    assert write_errors(client) == []


def test_a_finished_file_is_left_alone_when_another_collector_takes_the_campaign_later(
    client: redis.Redis, tmp_path: Path
) -> None:
    """`retry` may run it again elsewhere: the file the first finished is not a partial."""
    first = make_collector(client, tmp_path / "first", name="first")
    add(client, result("a"))
    assert first.poll(["c"], block_ms=50) == 1
    first.finish("c")
    second = make_collector(client, tmp_path / "second", name="second")
    add(client, result("b"))
    assert second.poll(["c"], block_ms=50) == 1
    first.close()
    second.close()
    assert [p.name for p in (tmp_path / "first").glob("*.jsonl")] == ["c.jsonl"]


def test_a_collector_whose_campaign_was_taken_over_keeps_its_part_as_partial(
    client: redis.Redis, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    first = make_collector(client, tmp_path / "first", name="first")
    add(client, result("a"))
    assert first.poll(["c"], block_ms=50) == 1
    first.held_at.clear()  # its lease is due to be renewed: it renews it
    add(client, result("a2"))
    assert first.poll(["c"], block_ms=50) == 1
    assert "taken over" not in caplog.text
    first._maybe_write_summaries(force=True)
    client.delete(collector_lease_key("c"))  # its lease lapsed: the first stalled
    second = make_collector(client, tmp_path / "second", name="second")
    add(client, result("b"))
    assert second.poll(["c"], block_ms=50) == 1  # and the first's line copied
    first.held_at.clear()  # its lease is due to be renewed
    assert first.poll(["c"], block_ms=50) == 0
    first.held_at.clear()
    assert first.poll(["c"], block_ms=50) == 0
    assert caplog.text.count("collector first: campaign c taken over by another collector") == 1
    host = socket.gethostname()
    assert sorted(p.name for p in (tmp_path / "first").iterdir()) == [
        f"c.partial-{host}.jsonl",
        f"c.partial-{host}.summary.json",
    ]
    assert f"the part written here is kept as {tmp_path / 'first'}" in caplog.text
    first.close()
    second.close()
    assert [r.job_id for r in read_results(tmp_path / "second" / "c.jsonl")] == ["a", "a2", "b"]


def test_each_campaign_is_named_with_the_collector_polling_it(
    client: redis.Redis, tmp_path: Path
) -> None:
    collector = make_collector(client, tmp_path, name="polling")
    add(client, result("a"))
    assert collector.poll(["c"], block_ms=50) == 1
    assert collectors_of(client, ["c", "unpolled"]) == {"c": "polling", "unpolled": None}
    assert collectors_of(client, []) == {}
    collector.finish("c")
    assert collectors_of(client, ["c"]) == {"c": None}


def test_after_redis_lost_its_data_the_file_is_opened_anew_and_its_lines_recorded(
    client: redis.Redis, tmp_path: Path
) -> None:
    """Kept open, the file's lines would count nowhere in the new Redis: the campaign
    would never end."""
    collector = make_collector(client, tmp_path)
    add(client, result("a"))
    assert collector.poll(["c"], block_ms=50) == 1
    client.flushdb()
    collector.redis_lost()
    assert open_on(tmp_path / "c.jsonl") == 0
    add(client, result("b"))
    assert collector.poll(["c"], block_ms=50) == 1
    assert client.get(collector_lease_key("c")) == "c1"  # taken again in the new Redis
    collector.close()
    assert client.smembers(collected_key("c")) == {"a", "b"}
    assert client.hgetall(counts_key("c")) == {"ok": "2"}
    assert [r.job_id for r in read_results(tmp_path / "c.jsonl")] == ["a", "b"]


def test_disk_tries_are_at_most_ten_seconds_apart_however_long_it_refuses(
    client: redis.Redis, tmp_path: Path
) -> None:
    blocker = tmp_path / "out"
    blocker.write_text("a file where the results folder should be")
    collector = make_collector(client, blocker)
    add(client, result("a"))
    assert collector.poll(["c"], block_ms=100) == 0
    collector.troubles["c"].failures = 20  # refused for long: the backoff is at its cap
    wait_for(
        lambda: collector.poll(["c"], block_ms=100) == 0 and collector.troubles["c"].failures == 21,
        10,
        "the next try",
    )
    assert 9 < collector.troubles["c"].retry_at - time.monotonic() <= 10


def test_a_collector_closing_while_the_disk_refuses_takes_its_error_back(
    client: redis.Redis, tmp_path: Path
) -> None:
    """Nobody tries that file any more: `status` must not say a collector is trying."""
    blocker = tmp_path / "out"
    blocker.write_text("a file where the results folder should be")
    collector = make_collector(client, blocker)
    add(client, result("a"))
    assert collector.poll(["c"], block_ms=100) == 0
    assert len(write_errors(client)) == 1
    collector.close()
    assert write_errors(client) == []
    assert client.xpending(results_stream_key("c"), COLLECTOR_GROUP)["pending"] == 1


def test_a_poll_with_no_campaign_to_read_waits_its_block_time(
    client: redis.Redis, tmp_path: Path
) -> None:
    """Never a busy loop: the campaign is another collector's, yet the poll waits."""
    first = make_collector(client, tmp_path / "first", name="first")
    assert first.poll(["c"], block_ms=10) == 0
    second = make_collector(client, tmp_path / "second", name="second")
    started = time.monotonic()
    assert second.poll(["c"], block_ms=300) == 0
    assert time.monotonic() - started >= 0.3
    started = time.monotonic()
    assert second.poll([], block_ms=50) == 0
    assert 0.05 <= time.monotonic() - started < 0.9


def test_abandoned_entries_are_looked_for_once_per_claim_interval(
    private_redis: PrivateRedis, tmp_path: Path
) -> None:
    """On a Redis of the test's own: its command statistics count this collector's only."""
    client = redis.Redis.from_url(private_redis.url, decode_responses=True)

    def claims() -> int:
        stats = client.info("commandstats").get("cmdstat_xautoclaim", {})
        return int(stats.get("calls", 0))

    collector = make_collector(client, tmp_path / "out")
    for _ in range(3):
        assert collector.poll(["c"], block_ms=10) == 0
    assert claims() == 1  # the first poll, then not before CLAIM_INTERVAL_SECONDS
    collector.claimed_at = time.monotonic() - 5.5  # as if the last look was 5.5 s ago
    assert collector.poll(["c"], block_ms=10) == 0
    assert claims() == 2


def test_the_summary_is_written_while_collecting_at_most_once_a_second(
    client: redis.Redis, tmp_path: Path
) -> None:
    collector = make_collector(client, tmp_path)
    summary = tmp_path / "c.summary.json"
    add(client, result("a"))
    assert collector.poll(["c"], block_ms=50) == 1
    assert json.loads(summary.read_text())["results"] == 1
    add(client, result("b"))
    assert collector.poll(["c"], block_ms=50) == 1
    assert json.loads(summary.read_text())["results"] == 1  # not again within a second
    collector.summary_written = time.monotonic() - 1.5  # as if written 1.5 s ago
    assert collector.poll(["c"], block_ms=50) == 0
    assert json.loads(summary.read_text())["results"] == 2  # SUMMARY_INTERVAL_SECONDS past
    collector.close()
    assert summary.read_text().startswith('{\n  "campaign_id": "c",\n')
    assert summary.read_text().endswith("}\n")


def test_a_summary_that_takes_long_to_write_is_written_less_often(
    client: redis.Redis, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A write of the running summary that takes 0.2 s (its statistics, on a large graded
    campaign) puts the next off to 0.2 / SUMMARY_SHARE = 4 s; the end's is written whole."""
    collector = make_collector(client, tmp_path)
    summary = tmp_path / "c.summary.json"
    written = ResultsFile.write_summary

    def slow(file: ResultsFile) -> None:
        time.sleep(0.2)
        written(file)

    monkeypatch.setattr(ResultsFile, "write_summary", slow)
    add(client, result("a"))
    assert collector.poll(["c"], block_ms=50) == 1
    assert collector.summary_interval >= 0.2 / SUMMARY_SHARE
    add(client, result("b"))
    collector.summary_written = time.monotonic() - 1.5  # a second's interval would be past
    assert collector.poll(["c"], block_ms=50) == 1
    assert json.loads(summary.read_text())["results"] == 1  # not yet
    collector.summary_written = time.monotonic() - 4.5
    assert collector.poll(["c"], block_ms=50) == 0
    assert json.loads(summary.read_text())["results"] == 2


def test_the_collector_lease_lasts_30_s_unless_told(tmp_path: Path) -> None:
    code = (
        "from evalrelay.bridge.results.collector import COLLECTOR_LEASE_MS; "
        "print(COLLECTOR_LEASE_MS)"
    )
    env = {k: v for k, v in os.environ.items() if k != "EVALRELAY_COLLECTOR_LEASE_SECONDS"}
    for told, lease_ms in ((None, "30000"), ("2.5", "2500")):
        extra = {"EVALRELAY_COLLECTOR_LEASE_SECONDS": told} if told else {}
        done = subprocess.run(
            [sys.executable, "-c", code], env=env | extra, capture_output=True, text=True
        )
        assert done.stdout.strip() == lease_ms, done.stderr


def test_more_own_pending_entries_than_one_read_are_all_finished_first(
    client: redis.Redis, tmp_path: Path
) -> None:
    """A collector restarted under its name with 501 entries read and not acknowledged
    reads them 500 at a time until none is left, then new ones."""
    stream = results_stream_key("c")
    pipe = client.pipeline()
    for i in range(501):
        pipe.xadd(stream, {"job_id": f"j{i}", "result": result(f"j{i}").model_dump_json()})
    pipe.execute()
    client.xgroup_create(stream, COLLECTOR_GROUP, id="0")
    client.xreadgroup(COLLECTOR_GROUP, "same", {stream: ">"})
    add(client, result("new"))
    collector = make_collector(client, tmp_path, name="same")
    assert [collector.poll(["c"], block_ms=50) for _ in range(3)] == [500, 1, 1]
    collector.close()
    assert client.xpending(stream, COLLECTOR_GROUP)["pending"] == 0


def test_a_report_that_cannot_be_written_is_logged_and_the_results_stand(
    client: redis.Redis, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    def failing(path: Path) -> None:
        raise RuntimeError("no report today")

    collector = Collector(client, "c1", lambda _: tmp_path, lambda _: 1, failing)
    add(client, result("a"))
    assert collector.poll(["c"], block_ms=50) == 1
    collector.finish("c")
    assert f"could not finish {tmp_path / 'c.jsonl'}" in caplog.text
    assert "RuntimeError: no report today" in caplog.text
    assert client.xlen(results_stream_key("c")) == 0


def test_a_stream_deleted_between_two_polls_is_read_anew(
    client: redis.Redis, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """Redis answers `NOGROUP` to a read of a group that is gone."""
    collector = make_collector(client, tmp_path)
    add(client, result("a"))
    assert collector.poll(["c"], block_ms=50) == 1
    client.delete(results_stream_key("c"))
    assert collector.poll(["c"], block_ms=50) == 0
    assert "collector c1: result streams were lost; reading them anew" in caplog.text
    add(client, result("b"))
    assert collector.poll(["c"], block_ms=50) == 1
    client.delete(results_stream_key("c"))
    client.set(results_stream_key("c"), "not a stream")  # any other refusal is raised
    with pytest.raises(redis.ResponseError, match="WRONGTYPE"):
        collector.poll(["c"], block_ms=50)
    collector.close()


def test_redis_out_of_reach_lets_go_of_the_files_and_closing_still_ends(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    server = PrivateRedis(tmp_path / "redis")
    server.folder.mkdir()
    server.start()
    try:
        client = redis.Redis.from_url(server.url, decode_responses=True)
        out = tmp_path / "out"
        collector = make_collector(client, out)
        add(client, result("a"), result("b", campaign="d"))
        assert collector.poll(["c", "d"], block_ms=50) == 2
        server.stop()
        with pytest.raises(redis.ConnectionError):
            collector.poll(["c", "d"], block_ms=50)
        assert collector.files == {}  # opened anew once Redis is back, recording its lines
        assert open_on(out / "c.jsonl") == open_on(out / "d.jsonl") == 0
        server.start()
        add(client, result("a2"), result("b2", campaign="d"))
        assert collector.poll(["c", "d"], block_ms=50) == 2  # both open again
        assert open_on(out / "c.jsonl") == open_on(out / "d.jsonl") == 1
        server.stop()
        collector.close()  # no Redis to finish with: says so, closes both files, returns
        assert "collector c1: Redis out of reach while closing" in caplog.text
        assert open_on(out / "c.jsonl") == open_on(out / "d.jsonl") == 0
    finally:
        server.stop()
    assert [r.job_id for r in read_results(out / "c.jsonl")] == ["a", "a2"]
    assert [r.job_id for r in read_results(out / "d.jsonl")] == ["b", "b2"]


def test_a_read_cut_off_by_redis_going_away_is_taken_up_at_once(
    client: redis.Redis, tmp_path: Path
) -> None:
    """Redis kept its data: the entries this consumer read before, never acknowledged, are
    read again at the next poll, not 30 s later as abandoned ones."""
    collector = make_collector(client, tmp_path)
    assert collector.poll(["c"], block_ms=10) == 0
    add(client, result("a"))
    client.xreadgroup(COLLECTOR_GROUP, "c1", {results_stream_key("c"): ">"})  # its lost read
    collector.redis_lost()
    assert collector.poll(["c"], block_ms=10) == 1
    collector.close()


def test_a_file_written_before_redis_lost_its_data_is_never_marked_partial(
    client: redis.Redis, tmp_path: Path
) -> None:
    """Its lines are nowhere else once Redis lost them: another collector taking the
    campaign in the new Redis does not hide them."""
    first = make_collector(client, tmp_path / "first", name="first")
    add(client, result("a"))
    assert first.poll(["c"], block_ms=50) == 1
    client.flushdb()
    first.redis_lost()
    second = make_collector(client, tmp_path / "second", name="second")
    add(client, result("b"))
    assert second.poll(["c"], block_ms=50) == 1
    assert first.poll(["c"], block_ms=50) == 0
    first.close()
    second.close()
    assert [p.name for p in (tmp_path / "first").glob("*.jsonl")] == ["c.jsonl"]


def test_a_campaign_whose_record_redis_refuses_is_not_written_and_its_file_closed(
    client: redis.Redis, tmp_path: Path
) -> None:
    client.set(collected_key("c"), "not a set")  # WRONGTYPE when its file is opened
    collector = make_collector(client, tmp_path)
    add(client, result("a"))
    with pytest.raises(redis.ResponseError, match="WRONGTYPE"):
        collector.poll(["c"], block_ms=50)
    assert collector.files == {}
    assert open_on(tmp_path / "c.jsonl") == 0
    assert client.xpending(results_stream_key("c"), COLLECTOR_GROUP)["pending"] == 1


def test_a_file_let_go_of_in_an_outage_and_taken_over_since_is_partial_at_close(
    tmp_path: Path,
) -> None:
    server = PrivateRedis(tmp_path / "redis")
    server.folder.mkdir()
    server.start()
    try:
        client = redis.Redis.from_url(server.url, decode_responses=True)
        first = make_collector(client, tmp_path / "first", name="first")
        add(client, result("a"))
        assert first.poll(["c"], block_ms=50) == 1
        server.stop()
        with pytest.raises(redis.ConnectionError):
            first.poll(["c"], block_ms=50)
        server.start()  # with its data; the first's lease lapsed meanwhile
        client.delete(collector_lease_key("c"))
        second = make_collector(client, tmp_path / "second", name="second")
        add(client, result("b"))
        assert second.poll(["c"], block_ms=50) == 1
        first.close()
        second.close()
    finally:
        server.stop()
    host = socket.gethostname()
    assert [p.name for p in (tmp_path / "first").glob("*.jsonl")] == [f"c.partial-{host}.jsonl"]
    assert [r.job_id for r in read_results(tmp_path / "second" / "c.jsonl")] == ["a", "b"]


def test_a_summary_the_disk_refuses_while_collecting_is_said(
    client: redis.Redis, tmp_path: Path
) -> None:
    collector = make_collector(client, tmp_path)
    add(client, result("a"))
    assert collector.poll(["c"], block_ms=50) == 1
    summary = tmp_path / "c.summary.json"
    summary.unlink()
    summary.mkdir()  # a folder where the summary goes: a file cannot replace it
    add(client, result("b"))
    collector.summary_written = time.monotonic() - 1.5  # its summary is due
    assert collector.poll(["c"], block_ms=50) == 1
    (said,) = write_errors(client)
    assert said.path == str(summary)


def test_an_append_the_disk_refuses_midway_closes_the_file_and_rewrites_its_summary(
    client: redis.Redis, tmp_path: Path
) -> None:
    """The results file is open when the disk refuses the next lines (a file size limit,
    EFBIG): the collector lets go of the file (no descriptor kept on it) and rewrites the
    summary from the lines on disk, and the refused results wait in Redis."""
    collector = make_collector(client, tmp_path)
    add(client, result("a"))
    assert collector.poll(["c"], block_ms=50) == 1
    path, summary = tmp_path / "c.jsonl", tmp_path / "c.summary.json"
    assert open_on(path) == 1
    summary.unlink()  # so that only the refusal's own summary can bring it back
    add(client, result("b").model_copy(update={"answer": "x" * 20_000}))
    limit = resource.getrlimit(resource.RLIMIT_FSIZE)
    ignored = signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # EFBIG, not a killed process
    # Room for a summary, not for b's line: the append stops partway through it.
    resource.setrlimit(resource.RLIMIT_FSIZE, (path.stat().st_size + 10_000, limit[1]))
    try:
        assert collector.poll(["c"], block_ms=50) == 0
    finally:
        resource.setrlimit(resource.RLIMIT_FSIZE, limit)
        signal.signal(signal.SIGXFSZ, ignored)
    (said,) = write_errors(client)
    assert said.path == str(path) and "EFBIG" in said.error
    assert open_on(path) == 0
    assert json.loads(summary.read_text())["results"] == 1
    assert [r.job_id for r in read_results(path)] == ["a"]  # cut back to its whole lines
    assert client.xpending(results_stream_key("c"), COLLECTOR_GROUP)["pending"] == 1
    collector.troubles["c"].retry_at = 0.0  # try again now: the disk takes it
    assert collector.poll(["c"], block_ms=50) == 1
    collector.close()
    assert [r.job_id for r in read_results(path)] == ["a", "b"]


# The collect process itself, last: the slowest tests (and the mutation runs' `-x` stops
# at the fast ones above first).


def test_collector_process_killed_and_restarted_mid_campaign(
    project: WriteFiles, processes: Processes, client: redis.Redis, redis_url: str
) -> None:
    root = project(
        {
            "targets.yaml": "targets:\n  - {name: slow, provider: mock, latency_ms: 300}\n",
            "evals.yaml": one_turn_cases(60),
        }
    )
    info = submit_campaign(redis_url, root, 60)
    path = Path(info.out_dir) / f"{info.campaign_id}.jsonl"
    first = processes.start("collect", "--campaign", info.campaign_id, name="collector-1")
    # The worker starts once the collector reads: started before, on a busy machine it
    # could finish all 60 jobs while the collector still starts, leaving none to cut off.
    wait_for(lambda: has_group(client, info.campaign_id), 60, "the first collector to read")
    processes.worker(client, "steady@test", "--concurrency", "1")  # 60 jobs: 18 s
    wait_for(
        lambda: path.exists() and len(path.read_text().splitlines()) >= 10, 60, "the first lines"
    )
    os.killpg(first.pid, signal.SIGKILL)
    first.wait(10)
    written_before = len(read_jsonl(path))
    assert written_before < 60
    processes.start("collect", "--campaign", info.campaign_id, name="collector-2")
    report = Path(info.out_dir) / f"{info.campaign_id}.html"
    wait_for(report.exists, 90, "the campaign finished, its report written")
    summary = Path(info.out_dir) / f"{info.campaign_id}.summary.json"
    # Its statistics import scipy and statsmodels first: seconds on a busy machine.
    wait_for(lambda: summary.exists() and '"results": 60' in summary.read_text(), 60, "the summary")
    lines = read_jsonl(path)
    assert len(lines) == 60
    assert len({line["job_id"] for line in lines}) == 60


def has_group(client: redis.Redis, campaign_id: str) -> bool:
    """Whether a collector made the campaign's consumer group: it reads the stream."""
    try:
        return bool(client.xinfo_groups(results_stream_key(campaign_id)))
    except redis.ResponseError:  # no stream yet
        return False


def next_round_of_reads(client: redis.Redis, campaign_id: str) -> None:
    """Wait until the collector, having made the campaign's group, makes three more reads
    (only a collector reads a results stream; its first round makes two): a whole round ran
    in between, its check whether the campaign is finished included. Redis 7.0 does not mark
    a consumer seen on a read that returns nothing, so its command statistics count them."""

    def reads() -> int:
        stats = client.info("commandstats").get("cmdstat_xreadgroup", {})
        return int(stats.get("calls", 0))

    wait_for(
        lambda: has_group(client, campaign_id), 30, f"the collector to read campaign {campaign_id}"
    )
    before = reads()
    wait_for(lambda: reads() >= before + 3, 30, f"three more reads of campaign {campaign_id}")


def test_a_running_collector_waits_for_a_campaign_whose_jobs_are_still_being_stored(
    project: WriteFiles, processes: Processes, client: redis.Redis, redis_url: str
) -> None:
    """The collect service may see a detached campaign before its job list is in Redis: it
    must wait for the jobs the campaign announced, not take 0 of 0 for finished."""
    root = project({"targets.yaml": ECHO_TARGET, "evals.yaml": one_turn_cases(30)})
    loaded = load_eval_file(root / "evals.yaml")
    info = CampaignInfo(
        campaign_id=f"slow-submit-{time.time_ns()}",
        created_at=datetime.now(UTC),
        sources=[str(root / "evals.yaml")],
        targets=["echo"],
        total=30,
        out_dir=str(root / "results"),
        collector="service",
    )  # type: ignore[arg-type]
    jobs = plan_jobs(info.campaign_id, [loaded], "echo", None)
    half = len(jobs) // 2
    queue = JobQueue.connect(redis_url)
    announce(client, info, [loaded])  # the campaign exists, no job yet
    processes.start("collect", name="collector")
    # A round polls, then asks whether the campaign is finished: the next round's read
    # shows the collector took the campaign with no job in it for unfinished.
    next_round_of_reads(client, info.campaign_id)
    store_jobs(client, jobs[:half])
    queue.send(jobs[:half])
    processes.worker(client, "echo@test", "-Q", "api")
    results = Path(info.out_dir) / f"{info.campaign_id}.jsonl"
    wait_for(lambda: results.exists() and len(read_jsonl(results)) == half, 60, "the first half")
    next_round_of_reads(client, info.campaign_id)  # and half of them stored for unfinished
    store_jobs(client, jobs[half:])
    queue.send(jobs[half:])
    wait_for(lambda: results.exists() and len(read_jsonl(results)) == 30, 60, "all 30 lines")
    assert len({line["job_id"] for line in read_jsonl(results)}) == 30


def test_a_collector_started_after_one_killed_before_the_report_writes_it(
    project: WriteFiles, processes: Processes, client: redis.Redis, redis_url: str
) -> None:
    root = project({"targets.yaml": ECHO_TARGET, "evals.yaml": one_turn_cases(5)})
    processes.worker(client, "echo@test", "-Q", "api")
    info = submit_campaign(redis_url, root, 5, target="echo")
    first = processes.start("collect", name="first")
    report = Path(info.out_dir) / f"{info.campaign_id}.html"
    wait_for(report.exists, 60, "the first collector's report")
    os.killpg(first.pid, signal.SIGKILL)
    first.wait()
    report.unlink()  # what a collector killed after the last line, before the report, leaves
    processes.start("collect", name="second")
    wait_for(report.exists, 30, "the report from the collector started next")
    assert len(read_jsonl(Path(info.out_dir) / f"{info.campaign_id}.jsonl")) == 5

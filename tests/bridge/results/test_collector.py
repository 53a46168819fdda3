"""The collector: every result written once, across duplicates, crashes and restarts."""

from __future__ import annotations

import os
import signal
import threading
import time
from datetime import UTC, datetime
from pathlib import Path

import pytest
import redis

from bridge.evalfile.cases import load_eval_file
from bridge.keys import COLLECTOR_GROUP, collected_key, counts_key, results_stream_key
from bridge.prompt.build import PromptRequest
from bridge.queue.campaigns import CampaignInfo, announce, plan_jobs, store_jobs
from bridge.queue.celery_queue import JobQueue
from bridge.results import collector as collector_module
from bridge.results.collector import Collector
from bridge.results.result import Result, Status
from bridge.results.results_file import ResultsFile, read_results
from tests.conftest import Processes, WriteFiles, one_turn_cases, read_jsonl, wait_for
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
    assert file.job_ids == {"a"}
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
    time.sleep(0.1)
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


def test_collector_process_killed_and_restarted_mid_campaign(
    project: WriteFiles, processes: Processes, client: redis.Redis, redis_url: str
) -> None:
    root = project(
        {
            "targets.yaml": "targets:\n  - {name: slow, provider: mock, latency_ms: 150}\n",
            "evals.yaml": one_turn_cases(60),
        }
    )
    processes.worker(client, "steady@test", "--concurrency", "4")
    info = submit_campaign(redis_url, root, 60)
    path = Path(info.out_dir) / f"{info.campaign_id}.jsonl"
    first = processes.start("collect", "--campaign", info.campaign_id, name="collector-1")
    wait_for(
        lambda: path.exists() and len(path.read_text().splitlines()) >= 10, 60, "the first lines"
    )
    os.killpg(first.pid, signal.SIGKILL)
    first.wait(10)
    written_before = len(read_jsonl(path))
    assert written_before < 60
    processes.start("collect", "--campaign", info.campaign_id, name="collector-2")
    wait_for(lambda: len(read_jsonl(path)) == 60, 90, "all sixty lines")
    time.sleep(1.5)
    lines = read_jsonl(path)
    assert len(lines) == 60
    assert len({line["job_id"] for line in lines}) == 60
    summary = (Path(info.out_dir) / f"{info.campaign_id}.summary.json").read_text()
    assert '"results": 60' in summary


def test_one_collector_at_a_time_writes_a_campaign(client: redis.Redis, tmp_path: Path) -> None:
    first = make_collector(client, tmp_path / "first", name="first")
    second = make_collector(client, tmp_path / "second", name="second")
    add(client, result("a"))
    assert first.poll(["c"], block_ms=50) == 1
    add(client, result("b"))
    assert second.poll(["c"], block_ms=50) == 0  # the campaign is first's
    first.finish("c")
    assert second.poll(["c"], block_ms=50) == 1
    second.close()
    assert not (tmp_path / "first" / "c.jsonl").read_text().count('"b"')
    # The second took it over: its file is whole, with the line the first wrote.
    assert [r.job_id for r in read_results(tmp_path / "second" / "c.jsonl")] == ["a", "b"]


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
    time.sleep(3)  # several polls of the collector over a campaign with no jobs
    store_jobs(client, jobs[:half])
    queue.send(jobs[:half])
    processes.worker(client, "echo@test", "-Q", "api")
    time.sleep(3)  # the first half collected, the rest not yet stored
    store_jobs(client, jobs[half:])
    queue.send(jobs[half:])
    results = Path(info.out_dir) / f"{info.campaign_id}.jsonl"
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
    time.sleep(0.5)
    client.delete(results_stream_key("c"))
    reader.join(10)
    assert outcome == [0]
    client.xadd(results_stream_key("c"), {"job_id": "j1", "result": result("j1").model_dump_json()})
    wait_for(lambda: collector.poll(["c"], block_ms=100) == 1, 10, "the new result")
    collector.close()

"""`evalrelay collect`: the service that writes detached campaigns' results says when each
one is complete, and where its results are, and rebuilds those Redis lost."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import redis

from evalrelay.bridge.keys import results_stream_key, watch_campaigns_key
from evalrelay.bridge.results.results_file import summary_on_disk, summary_path
from tests.conftest import (
    FAST_RECOVERY,
    PrivateRedis,
    Processes,
    WriteFiles,
    one_turn_cases,
    processes_on,
    read_jsonl,
    restart_empty,
    wait_for,
)

SLOW_TARGET = "targets:\n  - {name: slow, provider: mock, latency_ms: 150}\n"


def lines_in(path: Path) -> int:
    return len(path.read_text().splitlines()) if path.exists() else 0


def unwrapped(text: str) -> str:
    """Without white space: the log's lines are wrapped, paths included."""
    return "".join(text.split())


def test_collect_says_when_a_campaign_is_complete_and_where(
    project: WriteFiles, processes: Processes, client: redis.Redis, tmp_path: Path
) -> None:
    root = project({"evals.yaml": one_turn_cases(3)})
    out = tmp_path / "out"
    processes.worker(client, "w@test")
    processes.start("collect", "--out", str(out), name="collect")
    _, results = collected_detached(processes, root, out, 3, "mock")
    assert len(read_jsonl(results)) == 3


def collected_detached(
    processes: Processes, root: Path, out: Path, count: int, *targets: str
) -> tuple[str, Path]:
    """`run --detach` of the project's `evals.yaml` on `targets`, once the `collect` service
    says it wrote the campaign's `count` results: its id and its results file."""
    chosen = [option for target in targets for option in ("--target", target)]
    submitted = subprocess.run(
        [sys.executable, "-m", "evalrelay", "run", "evals.yaml", *chosen, "--detach"],
        env=processes.env, cwd=root, capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    campaign = submitted.stdout.strip()
    results = out / f"{campaign}.jsonl"
    line = f"campaign {campaign} complete: {count} results in {results}"
    wait_for(lambda: line in processes.log("collect"), 60, "collect to say it is complete")
    return campaign, results


GRADED_TARGETS = (
    "targets:\n"
    "  - {name: right, provider: mock, response: 'the answer is four'}\n"
    "  - {name: wrong, provider: mock, response: 'no idea'}\n"
)


def test_the_collect_service_keeps_no_answers_and_its_report_child_writes_the_statistics(
    project: WriteFiles, processes: Processes, client: redis.Redis, tmp_path: Path
) -> None:
    """A graded campaign through the service: the collector process never loads the
    statistics' libraries (it only counts, so its memory does not grow with the graded
    results), and the campaign's final `summary.json` has the statistics its lines give."""
    cases = one_turn_cases(12).replace("}]}", "}], evaluators: [{type: contains, value: four}]}")
    root = project({"evals.yaml": cases, "targets.yaml": GRADED_TARGETS})
    out = tmp_path / "out"
    processes.worker(client, "w@test")
    collect = processes.start("collect", "--out", str(out), name="collect")
    campaign, results = collected_detached(processes, root, out, 24, "right", "wrong")
    written = json.loads(summary_path(out, campaign).read_text())
    expected = summary_on_disk(results, campaign, 24)
    assert written["statistics"] == expected.as_json()["statistics"]
    assert set(written["statistics"]["targets"]) == {"right", "wrong"}
    assert written["targets"]["right"]["pass_rate"] == 1.0
    assert written["targets"]["wrong"]["pass_rate"] == 0.0
    mapped = Path(f"/proc/{collect.pid}/maps").read_text()
    assert "numpy" in Path(f"/proc/{os.getpid()}/maps").read_text()  # what it would show
    assert "scipy" not in mapped and "statsmodels" not in mapped and "numpy" not in mapped


def test_a_fresh_collector_leaves_alone_a_campaign_another_one_finished(
    project: WriteFiles, processes: Processes, client: redis.Redis, tmp_path: Path
) -> None:
    """A collector started after a campaign was finished by another, on another host (its
    file is not here), neither says it complete nor keeps a record of it in its folder;
    it collects a campaign started after it as usual."""
    root = project({"evals.yaml": one_turn_cases(3)})
    first, second = tmp_path / "first", tmp_path / "second"
    processes.worker(client, "w@test")
    processes.start("collect", "--out", str(first), name="first")

    def submit() -> str:
        submitted = subprocess.run(
            [sys.executable, "-m", "evalrelay", "run", "evals.yaml", "--target", "mock",
             "--detach"],
            env=processes.env, cwd=root, capture_output=True, text=True, timeout=60,
        )  # fmt: skip
        return submitted.stdout.strip()

    done = submit()
    wait_for(lambda: f"campaign {done} complete" in processes.log("first"), 60, "the first")
    processes.start("collect", "--out", str(second), name="second")
    later = submit()
    wait_for(lambda: f"campaign {later} complete" in processes.log("first") + processes.log(
        "second"), 60, "the later campaign")  # fmt: skip
    time.sleep(1)  # a round of the second collector after it saw both
    assert done not in processes.log("second")
    assert not (second / f"{done}.campaign.json").exists()
    assert not (second / f"{done}.jsonl").exists()


def test_collect_rebuilds_its_campaigns_when_redis_restarts_empty(
    project: WriteFiles, forgetful_redis: PrivateRedis, private_home: Path, tmp_path: Path
) -> None:
    """A detached campaign half collected, and a Redis that comes back with nothing: the
    service rebuilds it from the record it kept and its eval files, and finishes it with
    one line per job."""
    jobs = 150
    root = project({"targets.yaml": SLOW_TARGET, "evals.yaml": one_turn_cases(jobs)})
    running = processes_on(forgetful_redis.url, private_home, tmp_path / "logs", FAST_RECOVERY)
    env = running.env
    out = tmp_path / "out"
    try:
        running.start("worker", "-c", "4", name="worker")
        running.start("collect", "--out", str(out), "--name", "service", name="collect")
        submitted = subprocess.run(
            [sys.executable, "-m", "evalrelay", "run", "evals.yaml", "--target", "slow",
             "--detach"],
            env=env, cwd=root, capture_output=True, text=True, timeout=60,
        )  # fmt: skip
        campaign = submitted.stdout.strip()
        results = out / f"{campaign}.jsonl"
        wait_for(lambda: lines_in(results) >= 30, 60, "30 results")
        restart_empty(forgetful_redis)
        line = f"campaign {campaign} complete: {jobs} results in {results}"
        wait_for(lambda: line in running.log("collect"), 120, "collect to finish the campaign")
    finally:
        running.stop_all()
    lines = read_jsonl(results)
    assert len(lines) == jobs
    assert len({line["job_id"] for line in lines}) == jobs
    said = unwrapped(running.log("collect"))
    assert unwrapped("collect: Redis lost its data (it restarted empty, or evicted keys") in said
    rebuilt = re.search(
        rf"campaign{re.escape(campaign)}rebuiltfromitsevalfilesand{re.escape(str(results))}:"
        r"(\d+)resultskept,(\d+)jobssentagain",
        said,
    )
    assert rebuilt, said
    assert int(rebuilt[1]) >= 30
    assert int(rebuilt[1]) + int(rebuilt[2]) == jobs


def test_a_collector_started_after_redis_lost_its_data_rebuilds_the_campaigns_kept_here(
    project: WriteFiles, forgetful_redis: PrivateRedis, private_home: Path, tmp_path: Path
) -> None:
    """The collector was down when Redis came back empty: started again on the same folder,
    it finds there the record of a campaign Redis no longer knows, within its retention,
    and rebuilds it; the campaign finishes with one line per job, without `resume`."""
    jobs = 150
    slower = SLOW_TARGET.replace("latency_ms: 150", "latency_ms: 500")  # not done before the cut
    root = project({"targets.yaml": slower, "evals.yaml": one_turn_cases(jobs)})
    running = processes_on(forgetful_redis.url, private_home, tmp_path / "logs", FAST_RECOVERY)
    out = tmp_path / "out"
    try:
        running.start("worker", "-c", "4", name="worker")
        first = running.start("collect", "--out", str(out), name="first")
        submitted = subprocess.run(
            [sys.executable, "-m", "evalrelay", "run", "evals.yaml", "--target", "slow",
             "--detach"],
            env=running.env, cwd=root, capture_output=True, text=True, timeout=60,
        )  # fmt: skip
        campaign = submitted.stdout.strip()
        results = out / f"{campaign}.jsonl"
        wait_for(lambda: lines_in(results) >= 30, 60, "30 results")
        os.killpg(first.pid, signal.SIGKILL)
        first.wait(10)
        restart_empty(forgetful_redis)
        running.start("collect", "--out", str(out), name="second")
        line = f"campaign {campaign} complete: {jobs} results in {results}"
        wait_for(lambda: line in running.log("second"), 120, "the second collector to finish it")
    finally:
        running.stop_all()
    assert len({line["job_id"] for line in read_jsonl(results)}) == len(read_jsonl(results)) == jobs
    assert unwrapped(f"campaign {campaign} rebuilt from its eval files") in unwrapped(
        running.log("second")
    )


def test_collect_with_inbox_campaigns_writes_a_campaign_whose_watcher_is_down(
    project: WriteFiles, processes: Processes, client: redis.Redis
) -> None:
    """The watcher submits a file and is SIGKILLed; `collect --inbox-campaigns` writes the
    campaign's one results file where the watcher would have, and the watcher, back,
    moves the file to done/. Without the flag the collector leaves it waiting."""
    root = project(
        {
            "evalrelay.yaml": "",
            "targets.yaml": "targets:\n  - {name: slow, provider: mock, latency_ms: 1500}\n",
            "inbox/.keep": "",
        }
    )
    inbox, results = root / "inbox", root / "results"
    processes.worker(client, "w@test", "-c", "4")
    watch = ("watch", str(inbox), "--target", "slow", "--out", str(results), "--name", "wt")
    watcher = processes.start(*watch, name="watch-0")
    (inbox / "dropped.yaml").write_text(one_turn_cases(12))
    wait_for(lambda: queued_paths(client) == ["queued/dropped.yaml"], 60, "the watcher's submit")
    os.killpg(watcher.pid, signal.SIGKILL)  # after its record of the file in queued/
    watcher.wait()

    campaign_id = re.search(r"dropped\.yaml: campaign (\S+),", processes.log("watch-0"))[1]  # type: ignore[index]
    processes.start("collect", "--name", "services-only", name="plain")
    stream = results_stream_key(campaign_id)
    wait_for(lambda: client.xlen(stream) >= 12, 60, "every result waiting in Redis")
    time.sleep(2)  # a few polls of the plain collector
    assert not list(results.glob("*.jsonl"))  # it leaves inbox campaigns be

    processes.start("collect", "--name", "all", "--inbox-campaigns", name="all")

    def written() -> list[Path]:
        return [p for p in results.glob("*.jsonl") if not p.name.endswith(".attempts.jsonl")]

    wait_for(
        lambda: any(len(p.read_text().splitlines()) >= 12 for p in written()),
        90,
        "the inbox campaign's results, written by the collector",
    )
    [path] = written()
    ids = [line["job_id"] for line in read_jsonl(path)]
    assert len(ids) == len(set(ids)) == 12
    wait_for(lambda: "complete" in processes.log("all"), 30, "the collector to finish it")

    processes.start(*watch, name="watch-1")
    wait_for(lambda: (inbox / "done" / "dropped.yaml").exists(), 60, "the file in done/")
    assert [p.name for p in written()] == [path.name]


def queued_paths(client: redis.Redis) -> list[str]:
    """The files in `queued/` that the inbox's watchers follow (each campaign's, once its
    watcher has moved it there: killed between the move and this record, the next watcher
    finds the file only at its rescan, half a minute later)."""
    keys = client.keys(watch_campaigns_key("*"))
    return sorted(str(path) for key in keys for path in client.hvals(key) if path)

"""`evalrelay collect`: the service that writes detached campaigns' results says when each
one is complete, and where its results are, and rebuilds those Redis lost."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import redis

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
    submitted = subprocess.run(
        [sys.executable, "-m", "bridge.cli.main", "run", "evals.yaml", "--target", "mock",
         "--detach"],
        env=processes.env, cwd=root, capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    campaign = submitted.stdout.strip()
    results = out / f"{campaign}.jsonl"
    line = f"campaign {campaign} complete: 3 results in {results}"
    wait_for(lambda: line in processes.log("collect"), 60, "collect to say it is complete")
    assert len(read_jsonl(results)) == 3


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
            [sys.executable, "-m", "bridge.cli.main", "run", "evals.yaml", "--target", "slow",
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

"""`evalrelay retry`: each run again ends only when every job it sent has its new line."""

from __future__ import annotations

import os
from pathlib import Path

import redis

from tests.bridge.cli.test_run import cases, evalrelay, run
from tests.bridge.queue.test_campaigns import add_campaign
from tests.conftest import (
    Processes,
    WriteFiles,
    embedded_env,
    one_turn_cases,
    read_jsonl,
    wait_for,
)

SLOW_FAILURES = """\
targets:
  - {name: broken, provider: mock, latency_ms: 800, failure_rate: 1.0, failure_kind: infra_error}
"""


def test_retry_of_slow_failures_three_times_keeps_one_line_per_job(
    project: WriteFiles, private_home: Path
) -> None:
    root = project({"targets.yaml": SLOW_FAILURES, "evals/many.yaml": cases(10)})
    env = embedded_env(private_home)
    first = run("evals/many.yaml", "--target", "broken", env=env, cwd=root)
    assert first.returncode == 2, first.stderr  # every job ended without an answer
    (jsonl,) = (root / "results").glob("*.jsonl")
    campaign = jsonl.stem
    for attempt in (2, 3, 4):
        again = evalrelay("retry", campaign, env=env, cwd=root)
        assert again.returncode == 2, again.stderr  # still no answer from any job
        assert "10 jobs sent again" in again.stderr
        lines = read_jsonl(jsonl)
        assert len(lines) == 10, f"retry {attempt - 1} left {len(lines)} lines of 10"
        assert {line["attempt"] for line in lines} == {attempt}
        assert all(len(line["attempts"]) == attempt - 1 for line in lines)  # type: ignore[arg-type]
    moved = read_jsonl(jsonl.with_name(f"{campaign}.attempts.jsonl"))
    assert sorted(line["attempt"] for line in moved) == sorted([1, 2, 3] * 10)


def test_retry_latest_retries_the_newest_campaign(
    client: redis.Redis, redis_url: str, tmp_path: Path
) -> None:
    add_campaign(client, "old-20260301-120000-aaaa", 0, out_dir=str(tmp_path), done=1)
    add_campaign(client, "new-20260301-121000-bbbb", 10, out_dir=str(tmp_path), done=1)
    env = {**os.environ, "EVALRELAY_REDIS_URL": redis_url, "COLUMNS": "200"}
    again = evalrelay("retry", "latest", env=env, cwd=tmp_path)
    assert again.returncode == 0, again.stderr
    assert "campaign new-20260301-121000-bbbb: 0 jobs sent again" in again.stderr


SOMETIMES_FAILING = """\
targets:
  - {name: flaky, provider: mock, latency_ms: 300, failure_rate: 0.5, failure_kind: infra_error}
"""


def test_retry_while_a_collector_writes_the_campaign_refuses_and_loses_nothing(
    project: WriteFiles, processes: Processes, client: redis.Redis
) -> None:
    """Rewriting the results file under the collector that appends to it would lose lines:
    while the campaign runs, `retry` says so and touches nothing; once it ended, it runs."""
    root = project({"targets.yaml": SOMETIMES_FAILING, "evals/e.yaml": one_turn_cases(16)})
    processes.worker(client, "w@test", "--concurrency", "2")
    evals, out = str(root / "evals/e.yaml"), str(root / "out")
    running = processes.start("run", evals, "--target", "flaky", "--out", out, name="run")
    wait_for(lambda: list((root / "out").glob("*.jsonl")), 30, "the results file")
    (jsonl,) = (root / "out").glob("*.jsonl")
    campaign = jsonl.stem
    wait_for(
        lambda: any(line["status"] == "infra_error" for line in read_jsonl(jsonl)), 30, "a failure"
    )
    refused = evalrelay("retry", campaign, env=processes.env, cwd=root)
    assert refused.returncode == 1, refused.stderr
    assert f"campaign {campaign} is still running" in " ".join(refused.stderr.split())
    assert not jsonl.with_name(f"{campaign}.attempts.jsonl").exists()
    assert running.wait(60) in (0, 2), processes.log("run")
    lines = read_jsonl(jsonl)
    assert len({line["job_id"] for line in lines}) == len(lines) == 16
    failed = sum(line["status"] == "infra_error" for line in lines)

    again = evalrelay("retry", campaign, env=processes.env, cwd=root)
    assert again.returncode in (0, 2), again.stderr
    assert f"{failed} jobs sent again" in again.stderr
    lines = read_jsonl(jsonl)
    assert len({line["job_id"] for line in lines}) == len(lines) == 16
    assert len(read_jsonl(jsonl.with_name(f"{campaign}.attempts.jsonl"))) == failed

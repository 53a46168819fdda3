"""`evalrelay retry`: each run again ends only when every job it sent has its new line."""

from __future__ import annotations

import os
from pathlib import Path

import redis

from tests.bridge.cli.test_run import cases, evalrelay, run
from tests.bridge.queue.test_campaigns import add_campaign
from tests.conftest import WriteFiles, embedded_env, read_jsonl

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

"""`evalrelay pause`, `unpause` and `cancel` on a campaign a real worker is running."""

from __future__ import annotations

import time

import redis

from bridge.keys import inflight_key
from bridge.queue.campaigns import list_campaigns
from tests.bridge.cli.test_run import evalrelay
from tests.conftest import Processes, WriteFiles, one_turn_cases, read_jsonl, wait_for

TARGETS = "targets:\n  - {name: slow, provider: mock, response: fine, latency_ms: 300}\n"

JOBS, CONCURRENCY = 40, 2


def published(client: redis.Redis) -> int:
    """Jobs whose result a worker has published (each has its done mark)."""
    return sum(1 for _ in client.scan_iter("evalrelay:done:*", count=1000))


def test_pause_stops_new_jobs_within_seconds_and_unpause_finishes_with_one_line_per_job(
    project: WriteFiles, processes: Processes, client: redis.Redis
) -> None:
    root = project({"targets.yaml": TARGETS, "evals/e.yaml": one_turn_cases(JOBS)})
    processes.worker(client, "w1@test", "--concurrency", str(CONCURRENCY))
    evals, out = str(root / "evals/e.yaml"), str(root / "out")
    run = processes.start("run", evals, "--target", "slow", "--out", out, name="run")
    wait_for(lambda: published(client) >= 4, 60, "the first results")
    (info,) = list_campaigns(client)
    paused = evalrelay("pause", "latest", env=processes.env, cwd=root)
    assert paused.returncode == 0, paused.stderr
    at_pause = published(client)
    wait_for(lambda: client.zcard(inflight_key()) == 0, 5, "the running jobs to finish")
    stopped = published(client)
    assert stopped - at_pause <= CONCURRENCY  # only the jobs already running finished
    time.sleep(3)  # longer than ten jobs take when it runs
    assert published(client) == stopped < JOBS
    assert run.poll() is None  # `run` still follows the campaign

    status = evalrelay("status", info.campaign_id, env=processes.env | {"COLUMNS": "250"}, cwd=root)
    assert status.returncode == 0, status.stderr
    shown = " ".join(status.stdout.split())
    assert "paused │ yes, since" in shown and "paused by hand" in shown, shown
    assert "pause by" in shown

    again = evalrelay("unpause", info.campaign_id, env=processes.env, cwd=root)
    assert again.returncode == 0, again.stderr
    assert "sent again" in again.stderr
    assert run.wait(60) == 0, processes.log("run")
    lines = read_jsonl(next((root / "out").glob("*.jsonl")))
    assert len(lines) == JOBS
    assert len({line["job_id"] for line in lines}) == JOBS
    assert all(line["status"] == "ok" for line in lines)
    listed = evalrelay("status", info.campaign_id, env=processes.env | {"COLUMNS": "250"}, cwd=root)
    changes = " ".join(listed.stdout.split())
    assert "unpause by" in changes and "paused │" not in changes, changes

"""`evalrelay retry`: each run again ends only when every job it sent has its new line."""

from __future__ import annotations

import json
import os
import subprocess
import threading
from pathlib import Path

import redis

from evalrelay.bridge.keys import collector_lease_key, job_key, retry_request_key
from evalrelay.bridge.queue.steering import audit
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
from tests.worker.providers.vendor_server import Reply, Seen, VendorServer, openai_chat, serving

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
        paid = 10 * (attempt - 1)  # each retry paid for a call per job, and says so
        assert f"{paid} calls past one per job: {paid} retry" in again.stderr, again.stderr
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


JOBS, FAILING = 30, (1, 2, 4)
"""The cases the server fails (HTTP 500) until told otherwise: among the first sent."""


def running_campaign(
    project: WriteFiles, processes: Processes, client: redis.Redis, server: VendorServer
) -> tuple[Path, subprocess.Popen[bytes], Path]:
    """`JOBS` cases (`ask #i#`) to `server`, run by a worker of two: the project's folder,
    the `run` following them, and its results file once it is there."""
    root = project(
        {
            "targets.yaml": f"""\
            targets:
              - {{name: mini, provider: openai-compatible, model: gpt-4o-mini,
                  base_url: "{server.url}/v1", max_retries: 0}}
            """,
            "evals/e.yaml": one_turn_cases(JOBS, question="ask #{i}#"),
        }
    )
    processes.worker(client, "w@test", "--concurrency", "2", extra_env={"OPENAI_API_KEY": "k"})
    evals, out = str(root / "evals/e.yaml"), str(root / "out")
    running = processes.start("run", evals, "--target", "mini", "--out", out, name="run")
    wait_for(lambda: list((root / "out").glob("*.jsonl")), 30, "the results file")
    (jsonl,) = (root / "out").glob("*.jsonl")
    return root, running, jsonl


def test_retry_while_the_campaign_runs_has_its_collector_set_failures_aside_and_loses_nothing(
    project: WriteFiles, processes: Processes, client: redis.Redis
) -> None:
    """`retry` during the run: the collector writing the file sets the failed lines aside,
    the jobs run again, and `run` ends with one line per job, all answered."""
    failing = threading.Event()
    failing.set()

    def status_of(seen: Seen) -> int:
        asked = json.dumps(seen.body)
        return 500 if failing.is_set() and any(f"#{i}#" in asked for i in FAILING) else 200

    def hold(seen: Seen) -> None:  # the last case keeps the campaign running until the
        if f"#{JOBS - 1}#" in json.dumps(seen.body):  # failures were asked again
            wait_for(lambda: len(server.seen) >= JOBS + len(FAILING), 90, "the retried jobs")

    reply = Reply(openai_chat(), delay=0.4, status_of=status_of, hold=hold)
    with serving(reply) as server:
        root, running, jsonl = running_campaign(project, processes, client, server)
        campaign = jsonl.stem

        def failed() -> int:
            return sum(line["status"] == "infra_error" for line in read_jsonl(jsonl))

        wait_for(lambda: failed() == len(FAILING), 30, "the failures")
        failing.clear()
        assert running.poll() is None, "the campaign ended before the retry"
        again = evalrelay("retry", campaign, env=processes.env | {"COLUMNS": "250"}, cwd=root)
        said = " ".join(again.stderr.split())
        assert again.returncode == 0, said
        assert f"{len(FAILING)} jobs sent again (lines set aside by its collector run-" in said
        assert running.wait(60) == 0, processes.log("run")
        assert len(server.seen) == JOBS + len(FAILING)  # each failure asked once more, no more
    lines = read_jsonl(jsonl)
    assert len({line["job_id"] for line in lines}) == len(lines) == JOBS
    assert all(line["status"] == "ok" for line in lines)
    retried = sorted(str(line["case_id"]) for line in lines if line["attempt"] == 2)
    assert retried == sorted(f"c{i}" for i in FAILING)
    moved = read_jsonl(jsonl.with_name(f"{campaign}.attempts.jsonl"))
    assert sorted(str(line["case_id"]) for line in moved) == retried
    assert all(line["status"] == "infra_error" for line in moved)
    changes = [c for c in audit(client, campaign) if c.action == "retry"]
    assert len(changes) == 1 and "3 jobs sent again" in changes[0].detail


def test_retry_that_no_collector_answers_says_so_and_touches_nothing(
    client: redis.Redis, redis_url: str, tmp_path: Path
) -> None:
    campaign = "c-20260301-120000-aaaa"
    add_campaign(client, campaign, out_dir=str(tmp_path))
    client.set(collector_lease_key(campaign), "collect@elsewhere", px=60_000)
    env = {**os.environ, "EVALRELAY_REDIS_URL": redis_url, "COLUMNS": "250"}
    env["EVALRELAY_RETRY_ANSWER_SECONDS"] = "1"
    refused = evalrelay("retry", campaign, env=env, cwd=tmp_path)
    said = " ".join(refused.stderr.split())
    assert refused.returncode == 1, said
    assert "collect@elsewhere writes its results file, but did not answer" in said
    assert "nothing was moved or sent again" in said
    assert client.get(retry_request_key(campaign)) is None  # withdrawn: no later surprise


def test_retry_whose_collector_lets_go_sets_the_lines_aside_itself(
    client: redis.Redis, redis_url: str, tmp_path: Path
) -> None:
    """A collector that finishes (or dies) before taking the request lets go of its lease:
    the request is withdrawn and `retry` rewrites the file, holding the lease itself."""
    campaign = "c-20260301-120000-aaaa"
    add_campaign(client, campaign, out_dir=str(tmp_path))
    client.set(collector_lease_key(campaign), "run-gone", px=1500)
    env = {**os.environ, "EVALRELAY_REDIS_URL": redis_url, "COLUMNS": "250"}
    again = evalrelay("retry", campaign, env=env, cwd=tmp_path)
    assert again.returncode == 0, again.stderr
    said = " ".join(again.stderr.split())
    assert f"campaign {campaign}: 0 jobs sent again" in said and "set aside by" not in said, said
    assert client.get(retry_request_key(campaign)) is None


def test_retry_of_ok_lines_while_the_campaign_runs_plans_them_again_from_its_files(
    project: WriteFiles, processes: Processes, client: redis.Redis
) -> None:
    """A job collected `ok` has no stored copy any more (Redis keeps only what may still
    run): `retry --status ok` during the run plans those jobs again from the eval files,
    and `run` ends with one line per job, the retried ones at their second attempt."""
    retried = threading.Event()

    def hold(seen: Seen) -> None:  # the last case keeps the campaign running until the
        if f"#{JOBS - 1}#" in json.dumps(seen.body):  # retry has ended
            wait_for(retried.is_set, 90, "the retry")

    with serving(Reply(openai_chat(), hold=hold)) as server:
        root, running, jsonl = running_campaign(project, processes, client, server)
        wait_for(lambda: len(read_jsonl(jsonl)) == JOBS - 1, 60, "every line but the held one")
        assert not any(client.exists(job_key(str(line["job_id"]))) for line in read_jsonl(jsonl))
        again = evalrelay("retry", jsonl.stem, "--status", "ok", env=processes.env, cwd=root)
        retried.set()
        said = " ".join(again.stderr.split())
        assert again.returncode == 0, said
        assert f"{JOBS - 1} jobs sent again" in said
        assert running.wait(60) == 0, processes.log("run")
        assert len(server.seen) == 2 * JOBS - 1  # each ok job asked once more, no more
    lines = read_jsonl(jsonl)
    assert len({line["job_id"] for line in lines}) == len(lines) == JOBS
    assert all(line["status"] == "ok" for line in lines)
    again_lines = [line for line in lines if line["attempt"] == 2]
    assert len(again_lines) == JOBS - 1
    assert all(len(line["attempts"]) == 1 for line in again_lines)  # type: ignore[arg-type]
    moved = read_jsonl(jsonl.with_name(f"{jsonl.stem}.attempts.jsonl"))
    assert {line["job_id"] for line in moved} == {line["job_id"] for line in again_lines}

"""`evalrelay pause`, `unpause` and `cancel` on a campaign a real worker is running."""

from __future__ import annotations

import time
from collections import Counter
from pathlib import Path

import redis

from evalrelay.bridge.keys import done_prefix, inflight_key
from evalrelay.bridge.queue.campaigns import list_campaigns
from evalrelay.bridge.queue.steering import paused
from tests.bridge.cli.test_run import evalrelay
from tests.conftest import Processes, WriteFiles, one_turn_cases, read_jsonl, wait_for
from tests.worker.providers.vendor_server import Reply, VendorServer, openai_chat, serving

KEY = {"OPENAI_API_KEY": "k"}

TARGETS = "targets:\n  - {name: slow, provider: mock, response: fine, latency_ms: 300}\n"

JOBS, CONCURRENCY = 100, 2
"""15 s of work at the least: `pause`, however slow to start on a loaded machine, finds the
campaign running."""


def published(client: redis.Redis) -> int:
    """Jobs whose result a worker has published (each has its done mark, a field of one of
    its campaign's hashes of marks)."""
    hashes = client.scan_iter(done_prefix("*") + "*", count=1000)
    return sum(client.hlen(key) for key in hashes)


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


SLOW_CASES, SLOW_CALL_SECONDS, SLOT_CAP = 300, 0.5, 2
"""The issue's campaign: 300 cases on a target answering in 0.5 s, two calls at once."""


def slow_target_project(project: WriteFiles, url: str) -> Path:
    return project(
        {
            "targets.yaml": f"""\
            targets:
              - {{name: m, provider: openai-compatible, model: gpt-4o-mini,
                  base_url: "{url}/v1", max_concurrency: {SLOT_CAP}}}
            """,
            "evals/e.yaml": one_turn_cases(SLOW_CASES),
        }
    )


def starts_after(server: VendorServer, moment: float) -> list[float]:
    """When the server began each request it received after `moment` (monotonic)."""
    with server.lock:
        return [seen.at - moment for seen in server.seen if seen.at > moment]


def test_no_call_starts_after_pause_or_cancel_returns_whatever_jobs_wait_for(
    project: WriteFiles, processes: Processes, client: redis.Redis
) -> None:
    """Jobs begun and waiting for the target's `max_concurrency` slot start no call once
    `pause` returns, nor once `cancel` returns; the cancel then ends the campaign: one
    `cancelled` line per job that never called, `run` exits 3 within seconds."""
    with serving(Reply(openai_chat(), delay=SLOW_CALL_SECONDS)) as server:
        root = slow_target_project(project, server.url)
        processes.worker(client, "w1@test", "--concurrency", "16", extra_env=KEY)
        out = root / "out"
        evals = str(root / "evals/e.yaml")
        run = processes.start("run", evals, "--target", "m", "--out", str(out), name="run")
        wait_for(lambda: len(server.seen) >= 6, 60, "the first calls")

        paused_cmd = evalrelay("pause", "latest", env=processes.env, cwd=root)
        returned = time.monotonic()
        assert paused_cmd.returncode == 0, paused_cmd.stderr
        time.sleep(4 * SLOW_CALL_SECONDS * SLOT_CAP)  # eight calls' time at the cap
        assert starts_after(server, returned) == []
        calls_paused = len(server.seen)

        cancelled = evalrelay("cancel", "latest", env=processes.env, cwd=root)
        returned = time.monotonic()
        assert cancelled.returncode == 0, cancelled.stderr
        assert run.wait(20) == 3, processes.log("run")
        ended = time.monotonic() - returned
        assert starts_after(server, returned - 0.0) == []
        assert len(server.seen) == calls_paused

    lines = read_jsonl(next(out.glob("*.jsonl")))
    assert len(lines) == len({line["job_id"] for line in lines}) == SLOW_CASES
    statuses = Counter(str(line["status"]) for line in lines)
    assert statuses == {"ok": calls_paused, "cancelled": SLOW_CASES - calls_paused}, statuses
    assert "the campaign was cancelled" in processes.log("run")
    assert ended < 20


def test_cancel_of_a_running_campaign_stops_its_calls_and_ends_it(
    project: WriteFiles, processes: Processes, client: redis.Redis
) -> None:
    with serving(Reply(openai_chat(), delay=SLOW_CALL_SECONDS)) as server:
        root = slow_target_project(project, server.url)
        processes.worker(client, "w1@test", "--concurrency", "16", extra_env=KEY)
        out = root / "out"
        evals = str(root / "evals/e.yaml")
        run = processes.start("run", evals, "--target", "m", "--out", str(out), name="run")
        wait_for(lambda: len(server.seen) >= 6, 60, "the first calls")
        (info,) = list_campaigns(client)

        cancelled = evalrelay("cancel", info.campaign_id, env=processes.env, cwd=root)
        returned = time.monotonic()
        assert cancelled.returncode == 0, cancelled.stderr
        assert run.wait(20) == 3, processes.log("run")
        assert starts_after(server, returned) == []
        calls = len(server.seen)

        env = processes.env | {"COLUMNS": "250"}
        status = evalrelay("status", info.campaign_id, env=env, cwd=root)
        assert "cancelled │ yes" in " ".join(status.stdout.split()), status.stdout
        listed = evalrelay("status", env=env, cwd=root)
        assert f"{SLOW_CASES}/{SLOW_CASES} cancelled" in " ".join(listed.stdout.split())
        again = evalrelay("pause", info.campaign_id, env=processes.env, cwd=root)
        assert again.returncode == 1
        assert "is finished (it was cancelled)" in " ".join(again.stderr.split()), again.stderr
        assert paused(client, info.campaign_id) is None

    lines = read_jsonl(next(out.glob("*.jsonl")))
    statuses = Counter(str(line["status"]) for line in lines)
    assert statuses == {"ok": calls, "cancelled": SLOW_CASES - calls}, statuses
    assert len({line["job_id"] for line in lines}) == SLOW_CASES


def test_cancel_of_a_detached_campaign_ends_its_collector_within_seconds(
    project: WriteFiles, processes: Processes, client: redis.Redis
) -> None:
    with serving(Reply(openai_chat(), delay=SLOW_CALL_SECONDS)) as server:
        root = slow_target_project(project, server.url)
        processes.worker(client, "w1@test", "--concurrency", "16", extra_env=KEY)
        out = root / "out"
        evals = str(root / "evals/e.yaml")
        sent = evalrelay(
            "run",
            evals,
            "--target",
            "m",
            "--out",
            str(out),
            "--detach",
            env=processes.env,
            cwd=root,
        )
        assert sent.returncode == 0, sent.stderr
        campaign = sent.stdout.strip()
        collect = processes.start("collect", "--campaign", campaign, name="collect")
        wait_for(lambda: len(server.seen) >= 4, 60, "the first calls")
        cancelled = evalrelay("cancel", campaign, env=processes.env, cwd=root)
        returned = time.monotonic()
        assert cancelled.returncode == 0, cancelled.stderr
        assert collect.wait(20) == 0, processes.log("collect")
        assert starts_after(server, returned) == []
        calls = len(server.seen)
    lines = read_jsonl(out / f"{campaign}.jsonl")
    statuses = Counter(str(line["status"]) for line in lines)
    assert statuses == {"ok": calls, "cancelled": SLOW_CASES - calls}, statuses

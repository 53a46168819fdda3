"""A newcomer's first hour on one machine, with the real CLI: each step that leaves a
campaign unfinished says what to do next, and following it finishes the campaign with one
line per job."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
import redis

from evalrelay.bridge.keys import workers_key
from tests.conftest import (
    FAST_RECOVERY,
    Processes,
    WriteFiles,
    embedded_env,
    one_turn_cases,
    read_jsonl,
    wait_for,
)

JOBS = 40
SLOW = "targets:\n  - {name: slow, provider: mock, echo: true, latency_ms: 400}\n"
QUICK_FAILOVER = FAST_RECOVERY | {"EVALRELAY_COLLECTOR_LEASE_SECONDS": "3"}


def evalrelay(root: Path, env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "evalrelay", *args],
        env=env, cwd=root, capture_output=True, text=True, timeout=240,
    )  # fmt: skip


def said(command: subprocess.CompletedProcess[str]) -> str:
    """What a command printed, with rich's line breaks undone."""
    return " ".join((command.stdout + command.stderr).split())


def one_line_per_job(results: Path) -> None:
    ids = [line["job_id"] for line in read_jsonl(results)]
    assert len(ids) == JOBS and len(set(ids)) == JOBS


@pytest.fixture
def hangups_end_processes() -> Iterator[None]:
    """SIGHUP with its default action, for the processes the test starts: under `nohup` (a
    CI script started so, say) it is ignored, children inherit that, and a run "hung up on"
    would go on to the end."""
    before = signal.signal(signal.SIGHUP, signal.SIG_DFL)
    yield
    signal.signal(signal.SIGHUP, before)


@pytest.mark.usefixtures("hangups_end_processes")
def test_a_run_cut_off_on_the_embedded_default_is_shown_unfinished_and_resumed(
    project: WriteFiles, private_home: Path
) -> None:
    root = project({"targets.yaml": SLOW, "evals/many.yaml": one_turn_cases(JOBS)})
    env = embedded_env(private_home) | QUICK_FAILOVER

    detached = evalrelay(root, env, "run", "evals/many.yaml", "--target", "slow", "--detach")
    assert detached.returncode == 2
    assert "evalrelay worker\n  evalrelay collect\n" in detached.stderr, detached.stderr

    # A closed terminal: the run and its worker are hung up on partway through.
    run = subprocess.Popen(
        [sys.executable, "-m", "evalrelay", "run", "evals/many.yaml", "--target", "slow"],
        env=env, cwd=root, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
        start_new_session=True,
    )  # fmt: skip
    results = root / "results"
    wait_for(lambda: any(results.glob("*.jsonl")), 60, "the first results")
    os.killpg(run.pid, signal.SIGHUP)
    run.wait(30)
    (campaign_file,) = results.glob("*.jsonl")
    campaign = campaign_file.stem
    assert len(read_jsonl(campaign_file)) < JOBS

    hint = (
        f"{campaign}: the run that started it has ended; `evalrelay resume {campaign}` sends "
        "its missing jobs and collects it"
    )
    # Its collector's lease lapses within seconds (3 s here, 30 s by default).
    wait_for(lambda: hint in said(evalrelay(root, env, "status")), 30, "status to say so")

    resumed = evalrelay(root, env, "resume", campaign)
    assert resumed.returncode == 0, resumed.stderr
    first = said(resumed)
    assert f"campaign {campaign}: 0 of {JOBS} jobs sent again;" in first, resumed.stderr
    assert "still queued, running or waiting to be collected" in first
    one_line_per_job(campaign_file)

    after = evalrelay(root, env, "status")
    assert "has ended" not in after.stdout and f"{JOBS}/{JOBS}" in after.stdout


def test_a_detached_campaign_without_a_collector_says_so_and_collect_finishes_it(
    project: WriteFiles, processes: Processes, client: redis.Redis
) -> None:
    root = project({"targets.yaml": SLOW, "evals/many.yaml": one_turn_cases(JOBS)})
    processes.env |= QUICK_FAILOVER
    env = processes.env
    processes.worker(client, "w1@test")
    detached = evalrelay(root, env, "run", "evals/many.yaml", "--target", "slow", "--detach")
    assert detached.returncode == 0, detached.stderr
    campaign = detached.stdout.strip()
    wait_for(lambda: client.llen("api") == 0, 60, "the worker to take every job")

    status = evalrelay(root, env, "status", campaign)
    assert (
        f"{campaign}: no collector is writing its results, which wait in Redis; "
        f"`evalrelay resume {campaign}` sends the jobs that were lost and collects it, or "
        f"start `evalrelay collect --campaign {campaign}`"
    ) in said(status), status.stdout

    collected = evalrelay(root, env, "collect", "--campaign", campaign)
    assert collected.returncode == 0, collected.stderr
    assert f"campaign {campaign} complete: {JOBS} results in" in said(collected)
    one_line_per_job(root / "results" / f"{campaign}.jsonl")
    assert client.hlen(workers_key()) == 1

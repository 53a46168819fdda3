"""`evalrelay worker --processes N`: N whole workers, each its share of the concurrency, that
start, serve and stop as one."""

from __future__ import annotations

import json
import os
import signal
import subprocess
from pathlib import Path

import pytest
import redis

from evalrelay.bridge.keys import workers_key
from evalrelay.worker.processes import exit_code, process_name, shares
from tests.conftest import Processes, WriteFiles, one_turn_cases, wait_for
from tests.worker.test_tasks import collect_all, submit_campaign

TARGETS = "targets:\n  - {name: slow, provider: mock, latency_ms: 300}\n"


@pytest.mark.parametrize(
    ("concurrency", "processes", "expected"),
    [(128, 2, [64, 64]), (5, 2, [3, 2]), (7, 3, [3, 2, 2]), (1, 4, [1])],
)
def test_the_concurrency_is_shared_with_at_least_one_job_each(
    concurrency: int, processes: int, expected: list[int]
) -> None:
    assert shares(concurrency, processes) == expected


def test_a_given_name_is_numbered_per_process() -> None:
    assert process_name("api@box", 2) == ["--name", "api-2@box"]
    assert process_name("api", 1) == ["--name", "api-1"]
    assert process_name(None, 1) == []


def test_a_signal_s_end_is_a_shell_s_exit_code() -> None:
    assert (exit_code(-9), exit_code(0), exit_code(1)) == (137, 0, 1)


def pair(processes: Processes, client: redis.Redis) -> tuple[subprocess.Popen[bytes], list[int]]:
    """A worker of two processes (concurrency 4); their process ids once both serve."""
    parent = processes.start(
        "worker", "--processes", "2", "-c", "4", "-n", "pair@test", name="pair"
    )
    names = ["pair-1@test", "pair-2@test"]
    wait_for(lambda: all(client.hexists(workers_key(), n) for n in names), 60, "both workers")
    return parent, [int(json.loads(client.hget(workers_key(), n))["pid"]) for n in names]


def gone(pid: int) -> bool:
    """Ended: no such process, or one ended and not yet reaped (whose parent was killed)."""
    try:
        status = Path(f"/proc/{pid}/status").read_text()
    except FileNotFoundError:
        return True
    return "\nState:\tZ" in status


def test_both_processes_run_jobs_and_stop_with_sigterm(
    project: WriteFiles, processes: Processes, client: redis.Redis, redis_url: str
) -> None:
    root = project({"targets.yaml": TARGETS, "evals.yaml": one_turn_cases(40)})
    parent, pids = pair(processes, client)
    assert all(os.getpgid(pid) != os.getpgid(parent.pid) for pid in pids)
    lines = collect_all(processes, client, submit_campaign(redis_url, root, 40), 60)
    assert {line["worker"] for line in lines} == {"pair-1@test", "pair-2@test"}

    parent.send_signal(signal.SIGTERM)
    assert parent.wait(30) == 0
    assert all(gone(pid) for pid in pids)
    assert not client.hexists(workers_key(), "pair-1@test")


def test_one_process_killed_stops_the_other_and_the_worker_exits_with_its_code(
    processes: Processes, client: redis.Redis
) -> None:
    parent, (first, second) = pair(processes, client)
    os.kill(first, signal.SIGKILL)
    assert parent.wait(30) == 128 + signal.SIGKILL
    wait_for(lambda: gone(second), 10, "the other process to stop")


def test_the_processes_stop_when_the_worker_is_killed_outright(
    processes: Processes, client: redis.Redis
) -> None:
    parent, pids = pair(processes, client)
    parent.kill()
    parent.wait(10)
    wait_for(lambda: all(gone(pid) for pid in pids), 30, "both processes to stop")

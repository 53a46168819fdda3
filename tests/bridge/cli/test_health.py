"""`evalrelay health`: a real worker and a real `collect` service report themselves in
Redis; the check passes while they do, and fails naming them once they are SIGKILLed."""

from __future__ import annotations

import os
import signal
import subprocess
import sys

import redis

from tests.conftest import Processes, wait_for

ALIVE = {"EVALRELAY_ALIVE_SECONDS": "3"}
"""Alive means reported within 3 s (the services report every second then)."""


def health(processes: Processes, *argv: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "evalrelay", "health", *argv],
        env={**processes.env, **ALIVE}, capture_output=True, text=True, timeout=60,
    )  # fmt: skip


def test_health_passes_while_services_report_and_names_the_one_that_stopped(
    processes: Processes, client: redis.Redis
) -> None:
    never = health(processes, "--collector", "c1")
    assert never.returncode == 1
    assert "unhealthy: no collector named c1 has reported to Redis" in never.stderr

    processes.worker(client, "w1@test", extra_env=ALIVE)  # Celery names it so
    collector = processes.start("collect", "--name", "c1", name="c1", extra_env=ALIVE)
    wait_for(lambda: health(processes, "--collector", "c1").returncode == 0, 60, "c1 healthy")
    both = health(processes, "--worker", "w1", "--collector", "c1")
    assert both.returncode == 0, both.stderr
    assert "ok: worker w1@test reported" in both.stdout
    assert "ok: collector c1 reported" in both.stdout

    os.killpg(collector.pid, signal.SIGKILL)
    collector.wait()
    wait_for(lambda: health(processes, "--collector", "c1").returncode == 1, 30, "c1 unhealthy")
    gone = health(processes, "--worker", "w1", "--collector", "c1")
    assert gone.returncode == 1
    assert "unhealthy: collector c1 last reported" in gone.stderr
    assert "ok: worker w1@test reported" in gone.stdout


def test_a_collector_stopped_by_sigterm_leaves_no_heartbeat(
    processes: Processes, client: redis.Redis
) -> None:
    collector = processes.start("collect", "--name", "c2", name="c2", extra_env=ALIVE)
    wait_for(lambda: client.hexists("evalrelay:collectors", "c2"), 60, "c2 reporting")
    os.killpg(collector.pid, signal.SIGTERM)
    collector.wait(30)
    assert not client.hexists("evalrelay:collectors", "c2")
    said = health(processes, "--collector", "c2")
    assert said.returncode == 1
    assert "no collector named c2" in said.stderr


def test_health_without_a_cluster_says_what_to_set(processes: Processes) -> None:
    env = {k: v for k, v in processes.env.items() if k != "EVALRELAY_REDIS_URL"}
    done = subprocess.run(
        [sys.executable, "-m", "evalrelay", "health"],
        env=env, capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert done.returncode == 1
    assert "set EVALRELAY_REDIS_URL" in done.stderr

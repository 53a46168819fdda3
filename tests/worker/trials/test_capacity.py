"""A host runs as many trials as their cpus and memory fit, across its worker processes."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from evalrelay.bridge.evalfile.harbor.config import EnvironmentConfig
from evalrelay.worker.providers.base import NoCapacity
from evalrelay.worker.trials.capacity import CPUS_VARIABLE, MEMORY_VARIABLE, reserved


@pytest.fixture(autouse=True)
def host(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(CPUS_VARIABLE, "2")
    monkeypatch.setenv(MEMORY_VARIABLE, "4096")


def test_trials_run_while_their_cpus_fit_and_wait_beyond(tmp_path: Path) -> None:
    ledger = tmp_path / "trials.json"
    one = EnvironmentConfig(cpus=1, memory_mb=1024)
    with (
        reserved(one, ledger),
        reserved(one, ledger),
        pytest.raises(NoCapacity, match="holding 2 of 2 cpus"),
        reserved(one, ledger),
    ):
        pass
    with reserved(one, ledger):  # released: room again
        assert len(json.loads(ledger.read_text())) == 1
    assert json.loads(ledger.read_text()) == {}


def test_memory_bounds_them_too(tmp_path: Path) -> None:
    ledger = tmp_path / "trials.json"
    big = EnvironmentConfig(cpus=0.5, memory_mb=3000)
    with (
        reserved(big, ledger),
        pytest.raises(NoCapacity, match="3000 of 4096 MB"),
        reserved(big, ledger),
    ):
        pass


def test_a_task_bigger_than_the_host_runs_alone(tmp_path: Path) -> None:
    ledger = tmp_path / "trials.json"
    with (
        reserved(EnvironmentConfig(cpus=8, memory_mb=65536), ledger),
        pytest.raises(NoCapacity),
        reserved(EnvironmentConfig(cpus=0.1), ledger),
    ):
        pass


def test_trials_of_a_dead_worker_process_hold_nothing(tmp_path: Path) -> None:
    ledger = tmp_path / "trials.json"
    gone = subprocess.Popen(["true"])
    gone.wait()
    ledger.write_text(json.dumps({"x": {"pid": gone.pid, "cpus": 2, "memory_mb": 4096}}))
    with reserved(EnvironmentConfig(cpus=2, memory_mb=4096), ledger):
        (held,) = json.loads(ledger.read_text()).values()
        assert held["pid"] != gone.pid

"""How many trials a host runs at once: as many as their tasks' cpus and memory fit in the
host's, whatever number of workers (and processes) serve the `task` queue there.

The trials running on a host are written in one ledger file, changed under a lock; a
trial of a worker process that died without taking its line out is dropped when its
process is found gone. A trial that does not fit waits in its queue (`NoCapacity`); one
bigger than the host runs when it is alone, rather than never.
"""

from __future__ import annotations

import contextlib
import json
import os
import tempfile
import uuid
from collections.abc import Iterator
from pathlib import Path

import psutil
from filelock import FileLock

from evalrelay.bridge.evalfile.harbor.config import EnvironmentConfig
from evalrelay.worker.agents.pids import pid_alive
from evalrelay.worker.providers.base import NoCapacity

LEDGER = Path(tempfile.gettempdir()) / "evalrelay-task-capacity" / "trials.json"
RETRY_SECONDS = 1.0
"""How soon a trial that did not fit is offered again."""
CPUS_VARIABLE = "EVALRELAY_TASK_CPUS"
MEMORY_VARIABLE = "EVALRELAY_TASK_MEMORY_MB"
"""A worker host's budget for trials, when not all of the machine (cores; megabytes)."""


def host_cpus() -> float:
    given = os.environ.get(CPUS_VARIABLE)
    return float(given) if given else float(len(os.sched_getaffinity(0)))


def host_memory_mb() -> int:
    given = os.environ.get(MEMORY_VARIABLE)
    return int(given) if given else int(psutil.virtual_memory().total // (1024 * 1024))


@contextlib.contextmanager
def reserved(env: EnvironmentConfig, ledger: Path = LEDGER) -> Iterator[None]:
    """The task's cpus and memory held on this host while the block runs, or NoCapacity."""
    ledger.parent.mkdir(parents=True, exist_ok=True)
    key = uuid.uuid4().hex
    with FileLock(str(ledger) + ".lock"):
        trials = _live(_read(ledger))
        cpus = sum(t["cpus"] for t in trials.values())
        memory = sum(t["memory_mb"] for t in trials.values())
        if trials and (
            cpus + env.held_cpus > host_cpus() or memory + env.held_memory_mb > host_memory_mb()
        ):
            raise NoCapacity(
                f"this host runs trials holding {cpus:g} of {host_cpus():g} cpus and "
                f"{memory} of {host_memory_mb()} MB; this one needs {env.held_cpus:g} and "
                f"{env.held_memory_mb} MB",
                RETRY_SECONDS,
            )
        trials[key] = {"pid": os.getpid(), "cpus": env.held_cpus, "memory_mb": env.held_memory_mb}
        _write(ledger, trials)
    try:
        yield
    finally:
        with FileLock(str(ledger) + ".lock"):
            trials = _read(ledger)
            trials.pop(key, None)
            _write(ledger, trials)


def _live(trials: dict[str, dict[str, float]]) -> dict[str, dict[str, float]]:
    return {k: t for k, t in trials.items() if pid_alive(int(t["pid"]))}


def _read(ledger: Path) -> dict[str, dict[str, float]]:
    try:
        data = json.loads(ledger.read_text())
    except (OSError, json.JSONDecodeError):
        return {}
    return data if isinstance(data, dict) else {}


def _write(ledger: Path, trials: dict[str, dict[str, float]]) -> None:
    part = ledger.with_suffix(".part")
    part.write_text(json.dumps(trials))
    part.replace(ledger)

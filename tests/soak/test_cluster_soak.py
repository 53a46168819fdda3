"""Soak: a small cluster under chaos. Workers, the watcher and the collector service are
SIGKILLed and restarted, and Redis (append-only file) is restarted, while files dropped
in an inbox and `run --detach` campaigns go through. At the end every campaign has
exactly one line per job, and the figures are printed.

Not part of the default test command: `python -m pytest -m soak -s`. Knobs:
SOAK_FILES, SOAK_DETACHED, SOAK_CASES, SOAK_EVENTS, SOAK_SEED.
"""

from __future__ import annotations

import os
import random
import signal
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

import pytest

from tests.conftest import (
    FAST_RECOVERY,
    PrivateRedis,
    Processes,
    WriteFiles,
    free_port,
    one_turn_cases,
    read_jsonl,
    wait_for,
)

pytestmark = pytest.mark.soak

FILES = int(os.environ.get("SOAK_FILES", "8"))
DETACHED = int(os.environ.get("SOAK_DETACHED", "4"))
CASES = int(os.environ.get("SOAK_CASES", "150"))
EVENTS = int(os.environ.get("SOAK_EVENTS", "16"))
TARGETS = "targets:\n  - {name: mock, provider: mock, latency_ms: 100}\n"


def test_cluster_with_kills_and_redis_restarts_loses_and_doubles_nothing(
    project: WriteFiles, processes: Processes, tmp_path: Path
) -> None:
    server = PrivateRedis(tmp_path / "redis", port=free_port())
    server.folder.mkdir()
    server.start()
    rng = random.Random(int(os.environ.get("SOAK_SEED", "5")))
    root = project({"targets.yaml": TARGETS})
    inbox, results = root / "inbox", root / "results"
    inbox.mkdir()
    processes.env |= {"EVALRELAY_REDIS_URL": server.url, **FAST_RECOVERY}
    roles = {
        "worker-1": ("worker", "--name", "worker-1", "-c", "4"),
        "worker-2": ("worker", "--name", "worker-2", "-c", "4"),
        "watcher": ("watch", str(inbox), "--target", "mock", "--out", str(results)),
        "collector": ("collect", "--name", "collector"),
    }
    running = {name: processes.start(*args, name=f"{name}-0") for name, args in roles.items()}
    started = time.monotonic()
    try:
        for n in range(FILES):
            (inbox / f"f{n}.yaml").write_text(one_turn_cases(CASES, case_id=f"f{n}-{{i}}"))
        detached = []
        for n in range(DETACHED):
            (root / f"d{n}.yaml").write_text(one_turn_cases(CASES, case_id=f"d{n}-{{i}}"))
            submitted = subprocess.run(
                [sys.executable, "-m", "evalrelay", "run", f"d{n}.yaml", "--detach",
                 "--target", "mock"],
                env=processes.env, cwd=root, capture_output=True, text=True, timeout=120,
            )  # fmt: skip
            assert submitted.returncode == 0, submitted.stderr
            detached.append(submitted.stdout.strip())

        events: Counter[str] = Counter()
        for n in range(EVENTS):
            time.sleep(rng.uniform(0.5, 2.5))
            victim = rng.choice([*roles, "redis"])
            if victim == "redis":
                server.stop()
                time.sleep(rng.uniform(0.2, 2.0))
                server.start()
            else:
                os.killpg(running[victim].pid, signal.SIGKILL)
                running[victim].wait()
                running[victim] = processes.start(*roles[victim], name=f"{victim}-{n + 1}")
            events[victim] += 1
        chaos_over = time.monotonic()

        def finished() -> bool:
            files_done = all((inbox / "done" / f"f{n}.yaml").exists() for n in range(FILES))
            lines = [results / f"{c}.jsonl" for c in detached]
            return files_done and all(
                p.exists() and len(p.read_text().splitlines()) >= CASES for p in lines
            )

        wait_for(finished, 600, "every campaign to finish")
        ended = time.monotonic()
    finally:
        server.stop()

    jsonl = [p for p in results.glob("*.jsonl") if not p.name.endswith(".attempts.jsonl")]
    assert len(jsonl) == FILES + DETACHED
    for path in jsonl:
        ids = [line["job_id"] for line in read_jsonl(path)]
        assert len(ids) == len(set(ids)) == CASES, f"{path.name}: {len(ids)} lines"
    for log in processes.logs.glob("*.log"):
        said = processes.log(log.stem)
        assert "Unrecoverable error" not in said, log.name
        # Celery itself logs a traceback when an ack is cut off by the Redis restart.
        assert log.name.startswith("worker") or "Traceback" not in said, log.name
    happened = ", ".join(f"{k} {v}" for k, v in sorted(events.items()))
    print(
        f"\ncluster soak: {FILES} dropped files + {DETACHED} detached runs x {CASES} cases; "
        f"{sum(events.values())} events ({happened}); "
        f"chaos {chaos_over - started:.1f} s, all finished {ended - started:.1f} s after the "
        f"start; {(FILES + DETACHED) * CASES} jobs, each exactly once"
    )

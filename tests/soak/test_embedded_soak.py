"""Soak: concurrent embedded `evalrelay run`s on one private Redis, some of them killed.

Not part of the default test command (it takes minutes): `python -m pytest -m soak -s`.
Several runs share the embedded Redis, so each in-process worker also takes the others'
jobs. Every few seconds one run is killed (SIGKILL or SIGTERM, at random) and its
campaign is later finished with `resume`. At the end every campaign has exactly one line
per job, and the figures are printed.
"""

from __future__ import annotations

import os
import random
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.conftest import WriteFiles, embedded_env, one_turn_cases, read_jsonl

pytestmark = pytest.mark.soak

FINISHED = (0, 1, 2)
"""The exit codes of a run that finished (`bridge.cli.outcome`), whatever its cases did."""

RUNS = int(os.environ.get("SOAK_RUNS", "6"))
CASES = int(os.environ.get("SOAK_CASES", "80"))
KILLS = int(os.environ.get("SOAK_KILLS", "4"))
TARGETS = """\
targets:
  - {name: mock, provider: mock, latency_ms: 150, failure_rate: 0.1, failure_kind: infra_error}
"""


def test_concurrent_embedded_runs_with_kills_lose_and_double_nothing(
    project: WriteFiles, private_home: Path
) -> None:
    files = {f"evals/s{n}.yaml": one_turn_cases(CASES, case_id=f"s{n}-{{i}}") for n in range(RUNS)}
    root = project({"targets.yaml": TARGETS, **files})
    env = embedded_env(private_home) | {"EVALRELAY_ALIVE_SECONDS": "10"}
    rng = random.Random(int(os.environ.get("SOAK_SEED", "7")))

    def command(*args: str) -> subprocess.Popen[str]:
        return subprocess.Popen(
            [sys.executable, "-m", "evalrelay", *args],
            env=env, cwd=root, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
            start_new_session=True,
        )  # fmt: skip

    started = time.monotonic()
    runs = {
        n: command("run", f"evals/s{n}.yaml", "--target", "mock", "--concurrency", "4")
        for n in range(RUNS)
    }
    killed: dict[int, str] = {}
    while len(killed) < KILLS and any(p.poll() is None for p in runs.values()):
        time.sleep(rng.uniform(1.0, 4.0))
        alive = [n for n, p in runs.items() if p.poll() is None and n not in killed]
        if not alive:
            break
        victim = rng.choice(alive)
        how = rng.choice([signal.SIGKILL, signal.SIGTERM])
        os.killpg(runs[victim].pid, how)
        killed[victim] = how.name
    for n, process in runs.items():
        _, stderr = process.communicate(timeout=600)
        if n not in killed:
            # A finished run: 1 or 2 say cases failed or ended without an answer, as the
            # mock's injected failures make them (`bridge.cli.outcome`); not a crash.
            assert process.returncode in FINISHED, f"run {n} failed: {stderr}"

    resumed_at = time.monotonic()
    for n in sorted(killed):
        found = [p for p in (root / "results").glob(f"s{n}-*.jsonl") if "attempts" not in p.name]
        # A run killed before its first result left no file to name its campaign: run it anew.
        again = (
            command("resume", found[0].stem)
            if found
            else command("run", f"evals/s{n}.yaml", "--target", "mock")
        )
        _, stderr = again.communicate(timeout=600)
        assert again.returncode in FINISHED, stderr
    finished = time.monotonic()

    lines_per_campaign = {}
    for jsonl in (root / "results").glob("*.jsonl"):
        if jsonl.name.endswith(".attempts.jsonl"):
            continue
        ids = [line["job_id"] for line in read_jsonl(jsonl)]
        assert len(ids) == len(set(ids)), f"{jsonl.name}: a job written twice"
        lines_per_campaign[jsonl.stem] = len(ids)
    assert sorted(lines_per_campaign.values()) == [CASES] * RUNS, lines_per_campaign
    print(
        f"\nsoak: {RUNS} runs x {CASES} cases on one embedded Redis; killed "
        f"{len(killed)} ({', '.join(f'run {n} by {s}' for n, s in sorted(killed.items()))}); "
        f"runs done in {resumed_at - started:.1f} s, resumes in {finished - resumed_at:.1f} s; "
        f"{RUNS * CASES} jobs, each exactly once"
    )

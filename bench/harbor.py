"""Container-task trials under evalrelay beside real Harbor (pinned in tests/harbor_env.py)
on the same tasks and agents, in one run: the wall time per trial and its overhead.

    python bench/harbor.py [--tasks hello scorecard staged] [--agents oracle nop]
                           [--concurrent 2] [--rounds 1]

Each round runs one `harbor run` job (its local Docker environment, `--concurrent` trials at
a time) and one embedded `evalrelay run` campaign of the same tasks (the corpus under
tests/fixtures/harbor_tasks) and agents, in turn. Per trial it reads each system's own
account: Harbor's `result.json` (the trial's start and end, its agent and verifier phases,
per step for a multi-step task), evalrelay's result line (`duration_ms`, `timings.agent`,
`timings.verifier`). The overhead of a trial is all of its time but the agent's and the
tests' own: building or finding the image, starting the container, putting files in it,
collecting logs, removing it. Both systems build each task's image before the first
round (untimed), so the figures are of trials on a host that has the images. The goal is
evalrelay's overhead at most half of Harbor's.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from datetime import datetime
from pathlib import Path
from typing import Any, NamedTuple

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from tests.harbor_env import harbor_job, harbor_ready  # noqa: E402

CORPUS = ROOT / "tests" / "fixtures" / "harbor_tasks"


class Trial(NamedTuple):
    task: str
    agent: str
    seconds: float
    """The trial's own time, start to end."""
    work: float
    """Of it, the agent's and the tests' time."""

    @property
    def overhead(self) -> float:
        return self.seconds - self.work


def harbor_round(
    tasks: list[Path], agents: list[str], concurrent: int, scratch: Path
) -> tuple[float, list[Trial]]:
    name = f"bench-{time.monotonic_ns()}"
    started = time.monotonic()
    job = harbor_job(tasks, agents, scratch / "jobs", name, concurrent)
    wall = time.monotonic() - started
    trials = []
    for path in sorted(job.glob("*/result.json")):
        result = json.loads(path.read_text())
        phases = [result] + (result.get("step_results") or [])
        work = sum(_span(p.get("agent_execution")) + _span(p.get("verifier")) for p in phases)
        trials.append(
            Trial(
                Path(result["config"]["task"]["path"]).name,
                result["agent_info"]["name"],
                _span(result),
                work,
            )
        )
    return wall, trials


def evalrelay_round(
    tasks: list[Path], agents: list[str], scratch: Path
) -> tuple[float, list[Trial]]:
    root = Path(tempfile.mkdtemp(dir=scratch))
    for task in tasks:
        shutil.copytree(task, root / "tasks" / task.name)
    env = {k: v for k, v in os.environ.items() if k != "EVALRELAY_REDIS_URL"}
    env["EVALRELAY_HOME"] = str(root / "home")
    started = time.monotonic()
    done = subprocess.run(
        [sys.executable, "-m", "evalrelay", "run", "tasks", "--target", ",".join(agents),
         "--out", str(root / "results")],
        cwd=root, env=env, capture_output=True, text=True, stdin=subprocess.DEVNULL,
    )  # fmt: skip
    wall = time.monotonic() - started
    if done.returncode not in (0, 1):
        raise RuntimeError(f"evalrelay run failed ({done.returncode}): {done.stderr[-3000:]}")
    (jsonl,) = (root / "results").glob("*.jsonl")
    trials = []
    for line in jsonl.read_text().splitlines():
        result = json.loads(line)
        timings = result.get("timings") or {}
        work = (timings.get("agent") or 0.0) + (timings.get("verifier") or 0.0)
        trials.append(
            Trial(
                result["case_id"].split("/")[-1],
                result["target"],
                result["duration_ms"] / 1000,
                work,
            )
        )
    return wall, trials


def _span(phase: dict[str, Any] | None) -> float:
    if not phase or not phase.get("started_at") or not phase.get("finished_at"):
        return 0.0
    start = datetime.fromisoformat(phase["started_at"])
    end = datetime.fromisoformat(phase["finished_at"])
    return (end - start).total_seconds()


def summary(label: str, wall: float, trials: list[Trial]) -> dict[str, float]:
    row = {
        "wall": wall,
        "trial": statistics.mean(t.seconds for t in trials),
        "work": statistics.mean(t.work for t in trials),
        "overhead": statistics.mean(t.overhead for t in trials),
    }
    print(
        f"{label:<10} {len(trials):>3} trials  wall {wall:7.1f} s  per trial {row['trial']:6.2f} s"
        f"  agent+tests {row['work']:5.2f} s  overhead {row['overhead']:6.2f} s"
    )
    return row


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--tasks", nargs="+", default=["hello", "scorecard", "staged"])
    parser.add_argument("--agents", nargs="+", default=["oracle", "nop"])
    parser.add_argument("--concurrent", type=int, default=2)
    parser.add_argument("--rounds", type=int, default=1)
    args = parser.parse_args()
    tasks = [CORPUS / name for name in args.tasks]
    harbor_ready()
    with tempfile.TemporaryDirectory(prefix="evalrelay-bench-harbor-") as folder:
        scratch = Path(folder)
        # Untimed: each system builds the tasks' images once, as a host that ran them has.
        harbor_round(tasks, args.agents[:1], args.concurrent, scratch)
        evalrelay_round(tasks, args.agents[:1], scratch)
        for round_index in range(args.rounds):
            print(f"round {round_index + 1}: {len(tasks)} tasks x {args.agents}")
            theirs = summary("harbor", *harbor_round(tasks, args.agents, args.concurrent, scratch))
            ours = summary("evalrelay", *evalrelay_round(tasks, args.agents, scratch))
            print(
                f"ratio evalrelay/harbor: wall {ours['wall'] / theirs['wall']:.2f}, per trial "
                f"{ours['trial'] / theirs['trial']:.2f}, overhead "
                f"{ours['overhead'] / theirs['overhead']:.2f} (goal: at most 0.5)"
            )


if __name__ == "__main__":
    main()

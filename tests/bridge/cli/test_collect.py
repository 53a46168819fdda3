"""`evalrelay collect`: the service that writes detached campaigns' results says when each
one is complete, and where its results are."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import redis

from tests.conftest import Processes, WriteFiles, one_turn_cases, read_jsonl, wait_for


def test_collect_says_when_a_campaign_is_complete_and_where(
    project: WriteFiles, processes: Processes, client: redis.Redis, tmp_path: Path
) -> None:
    root = project({"evals.yaml": one_turn_cases(3)})
    out = tmp_path / "out"
    processes.worker(client, "w@test")
    processes.start("collect", "--out", str(out), name="collect")
    submitted = subprocess.run(
        [sys.executable, "-m", "bridge.cli.main", "run", "evals.yaml", "--target", "mock",
         "--detach"],
        env=processes.env, cwd=root, capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    campaign = submitted.stdout.strip()
    results = out / f"{campaign}.jsonl"
    line = f"campaign {campaign} complete: 3 results in {results}"
    wait_for(lambda: line in processes.log("collect"), 60, "collect to say it is complete")
    assert len(read_jsonl(results)) == 3

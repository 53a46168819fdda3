"""npm's `promptfoo eval` and `evalrelay run` on the same configs, offline (promptfoo's
`echo` provider answers with the prompt): the same pass or fail for every assertion of
every test, javascript, python and `not-` forms included. Each assertion carries a
`metric`, the name both tools report it under."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path
from typing import Any

import redis

from tests.bridge.cli.test_run import run
from tests.conftest import Processes, read_jsonl
from tests.promptfoo_cli import promptfoo_bin

CONFIGS = Path(__file__).parent / "parity"


def promptfoo_verdicts(folder: Path) -> dict[tuple[str, str], bool]:
    """(test description, metric) → pass, as `promptfoo eval` reports them."""
    out = folder / "promptfoo-results.json"
    env = {
        **os.environ,
        "PROMPTFOO_DISABLE_TELEMETRY": "1",
        "PROMPTFOO_DISABLE_UPDATE": "1",
        "PROMPTFOO_DISABLE_SHARING": "1",
        "PROMPTFOO_CONFIG_DIR": str(folder / ".promptfoo"),
    }
    done = subprocess.run(
        [str(promptfoo_bin() / "promptfoo"), "eval", "-c", "promptfooconfig.yaml", "-o",
         str(out), "--no-cache", "--no-progress-bar", "--no-table"],
        cwd=folder, env=env, capture_output=True, text=True, timeout=120, check=False,
    )  # fmt: skip
    assert out.is_file(), done.stderr
    results = json.loads(out.read_text())["results"]["results"]
    verdicts = {}
    for result in results:
        assert result["gradingResult"], result.get("error")
        for component in result["gradingResult"]["componentResults"]:
            key = (result["testCase"]["description"], component["assertion"]["metric"])
            verdicts[key] = component["pass"]
    return verdicts


def evalrelay_verdicts(lines: list[dict[str, Any]]) -> dict[tuple[str, str], bool]:
    """(test description, evaluator name) → pass: a score of 1 (promptfoo's assertions
    score 1 or 0, and the code assertions report their pass as 1 or 0)."""
    verdicts = {}
    for line in lines:
        description = line["case_id"].split("-", 2)[2].replace("-", " ")
        for evaluator in line["evaluator_results"]:
            assert evaluator["error"] is None, evaluator
            verdicts[(description, evaluator["name"])] = evaluator["score"] >= 1.0
    return verdicts


def test_promptfoo_and_evalrelay_agree_on_every_assertion(
    tmp_path: Path, processes: Processes, client: redis.Redis
) -> None:
    folder = tmp_path / "project"
    shutil.copytree(CONFIGS, folder)
    (folder / "evalrelay.yaml").write_text("")
    expected = promptfoo_verdicts(folder)
    processes.worker(client, "w1@parity")
    done = run("promptfooconfig.yaml", "--out", "out", env=processes.env, cwd=folder)
    assert done.returncode in (0, 1), done.stderr  # 1: some cases fail, as they must
    lines = read_jsonl(next((folder / "out").glob("*.jsonl")))
    assert {line["target"] for line in lines} == {"echo"}
    got = evalrelay_verdicts(lines)
    assert len(expected) == 54
    assert got == expected
    assert False in expected.values() and True in expected.values()

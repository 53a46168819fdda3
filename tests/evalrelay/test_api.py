"""`import evalrelay`: `load`, `run` and `compare` from a Python program, as a user calls them
(a process of its own on the embedded default: a private Redis and a worker of its own)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from tests.conftest import WriteFiles, embedded_env, read_jsonl

TARGETS = """\
targets:
  - {name: echo, provider: mock, echo: true}
  - {name: fixed, provider: mock, response: "question 1"}
"""

PROGRAM = """\
import json, sys
import evalrelay

files = evalrelay.load("evals")
before = evalrelay.run("evals", targets=["echo"], name="before")
after = evalrelay.run("evals/many.yaml", targets=["fixed"], name="after")
change = evalrelay.compare(before, after.results_file, targets=("echo", "fixed"))
same = evalrelay.compare(before, before)
print(json.dumps({
    "loaded": [[str(f.path.name), len(f.cases)] for f in files],
    "before": [before.campaign_id, str(before.results_file), before.summary.failed,
               before.summary.mean_score(), [str(p) for p in before.reports]],
    "after": [after.campaign_id, after.summary.failed, len(list(after.results()))],
    "regressed": sorted(c.case_id for c in change.regressed),
    "verdict": change.verdict,
    "pairs": len(change.statistics.pairs),
    "same": [same.verdict, len(same.changes), len(same.regressed)],
}))
"""


def graded_cases(count: int) -> str:
    """`count` cases asking `question {i}`, each passing when its answer contains that."""
    lines = [
        f"  - {{id: case-{i}, input_messages: [{{role: user, content: 'question {i}'}}], "
        f"evaluators: [{{type: contains, value: 'question {i}'}}]}}"
        for i in range(count)
    ]
    return "\n".join(["evalcases:", *lines]) + "\n"


def test_load_run_compare_from_python(project: WriteFiles, private_home: Path) -> None:
    """Two runs and their comparison: each run's lines are on disk exactly once, its summary
    is what the lines say, and the comparison finds the cases the second run broke."""
    files = {"targets.yaml": TARGETS, "evals/many.yaml": graded_cases(6), "run.py": PROGRAM}
    root = project(files)
    done = subprocess.run(
        [sys.executable, "run.py"],
        env=embedded_env(private_home),
        cwd=root,
        capture_output=True,
        text=True,
        timeout=240,
        stdin=subprocess.DEVNULL,
    )
    assert done.returncode == 0, done.stderr
    said = json.loads(done.stdout.splitlines()[-1])
    assert said["loaded"] == [["many.yaml", 6]]
    before_id, before_file, before_failed, mean, reports = said["before"]
    lines = read_jsonl(Path(before_file))
    assert len(lines) == 6 and len({line["job_id"] for line in lines}) == 6
    assert {line["campaign_id"] for line in lines} == {before_id}
    assert before_failed == 0 and mean == 1.0
    assert reports == [before_file.removesuffix(".jsonl") + ".html"]
    assert Path(reports[0]).is_file()
    after_id, after_failed, after_results = said["after"]
    assert after_id.startswith("after-") and after_results == 6
    assert after_failed == 5  # every case but case-1 now answers "question 1"
    assert said["regressed"] == [f"case-{i}" for i in (0, 2, 3, 4, 5)]
    assert said["verdict"] == "5 of 6 results regressed (5 passed before and not now)"
    assert said["pairs"] == 1
    assert said["same"] == ["no regression in 6 results", 6, 0]

"""`code` evaluators: a script of the tests' own, fed the case as JSON, run without a shell."""

from __future__ import annotations

import sys
import time
import uuid
from pathlib import Path

import pytest

from evalrelay.bridge.evalfile.evaluators import CodeEvaluator
from evalrelay.worker.grading.errors import GradingError
from evalrelay.worker.grading.script import run_script
from tests.conftest import running_with
from tests.worker.grading.test_grade import job

SCRIPT = """\
import json, sys
case = json.load(sys.stdin)
answer = case["candidate_answer"]
if "crash" in answer:
    sys.exit("the grader crashed on purpose")
if "garbage" in answer:
    print("not json"); sys.exit(0)
found = case["reference_answer"] in answer
verdict = {"score": 1.0 if found else 0.25, "reasoning": case["case_id"]}
verdict["hits" if found else "misses"] = ["mentions the reference" if found else "no reference"]
print(json.dumps(verdict))
"""


@pytest.fixture
def script(tmp_path: Path) -> CodeEvaluator:
    (tmp_path / "grader with space.py").write_text(SCRIPT)
    return CodeEvaluator(
        type="code", script=[sys.executable, "grader with space.py"], cwd=str(tmp_path)
    )


def test_script_verdict_becomes_the_evaluator_result(script: CodeEvaluator) -> None:
    result = run_script(script, "grader", job(reference_answer="Paris"), "It is Paris")
    assert (result.score, result.hits, result.reasoning) == (
        1.0,
        ["mentions the reference"],
        "case",
    )
    low = run_script(script, "grader", job(reference_answer="Paris"), "It is Rome")
    assert (low.score, low.misses) == (0.25, ["no reference"])


@pytest.mark.parametrize(
    ("answer", "problem"),
    [
        ("crash", "script exited with code 1: the grader crashed on purpose"),
        ("garbage", "script printed no valid verdict: no JSON object in the reply"),
    ],
)
def test_broken_script_is_a_grading_error(script: CodeEvaluator, answer: str, problem: str) -> None:
    with pytest.raises(GradingError, match=problem):
        run_script(script, "grader", job(reference_answer="Paris"), answer)


def test_script_past_its_time_limit_is_stopped(tmp_path: Path) -> None:
    marker = f"evalrelay-grader-{uuid.uuid4().hex}"
    spec = CodeEvaluator(
        type="code",
        script=[sys.executable, "-c", "import time; time.sleep(600)", marker],
        cwd=str(tmp_path),
        timeout_seconds=1,
    )
    started = time.monotonic()
    with pytest.raises(GradingError, match="did not finish within 1 s"):
        run_script(spec, "slow", job(), "answer")
    assert time.monotonic() - started < 8
    assert running_with(marker) == []


CODE_JUDGE = """\
import json, sys
case = json.load(sys.stdin)
said = case["output_messages"][-1]["content"]
wanted = case["expected_messages"][-1]["content"]
print(json.dumps({"score": 1.0 if wanted in said else 0.0, "hits": [case["config"]["label"]],
                  "misses": [], "reasoning": " ".join(sorted(case))}))
"""


def test_agentv_code_judge_runs_through_a_shell_with_its_input_and_config(
    tmp_path: Path,
) -> None:
    (tmp_path / "judge.py").write_text(CODE_JUDGE)
    spec = CodeEvaluator.model_validate(
        {
            "name": "judge",
            "type": "code_judge",
            "script": f"{sys.executable} judge.py | cat",  # a pipe: a shell runs it
            "cwd": str(tmp_path),
            "label": "checked by the judge",  # any other key reaches the script as config
        }
    )
    result = run_script(spec, "judge", job(reference_answer="Paris"), "It is Paris")
    assert (result.score, result.hits) == (1.0, ["checked by the judge"])
    for key in ("candidate_answer", "expected_messages", "guideline_files", "config"):
        assert key in str(result.reasoning)

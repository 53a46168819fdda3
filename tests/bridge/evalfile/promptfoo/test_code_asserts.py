"""The runners of promptfoo's `python` and `javascript` assertions, run as the worker runs
them: their return read as promptfoo 0.121 reads it (normalizeScriptResult and the
javascript handler), a number being the score, `not-` turning the pass and keeping it."""

from __future__ import annotations

import json
import subprocess
from typing import Any

import pytest

from evalrelay.bridge.evalfile.promptfoo.code_asserts import JS_RUNNER, PY_RUNNER


def verdict(language: str, code: str, threshold: float | None = None, inverse: bool = False
            ) -> tuple[bool, float]:  # fmt: skip
    config: dict[str, Any] = {"pf_code": code, "pf_vars": {}}
    if threshold is not None:
        config["pf_threshold"] = threshold
    if inverse:
        config["pf_inverse"] = True
    argv = ["python3", "-I", "-c", PY_RUNNER] if language == "python" else ["node", "-e", JS_RUNNER]
    done = subprocess.run(
        argv, input=json.dumps({"output": "an answer", "config": config}),
        capture_output=True, text=True, timeout=30, check=True,
    )  # fmt: skip
    said = json.loads(done.stdout)
    return said["pass"], said["score"]


@pytest.mark.parametrize("language", ["python", "javascript"])
def test_numbers_are_scores_and_pass_above_zero_or_at_the_threshold(language: str) -> None:
    assert verdict(language, "0.3") == (True, 0.3)
    assert verdict(language, "0") == (False, 0)
    assert verdict(language, "0.3", threshold=0.5) == (False, 0.3)
    assert verdict(language, "0.3", inverse=True) == (False, 0.3)


@pytest.mark.parametrize("language", ["python", "javascript"])
def test_booleans_score_one_or_zero_and_not_turns_them(language: str) -> None:
    true = "True" if language == "python" else "true"
    assert verdict(language, true) == (True, 1)
    assert verdict(language, true, inverse=True) == (False, 0)


def test_a_python_grading_result_fails_below_the_threshold_and_text_is_read() -> None:
    result = "{'pass': True, 'score': 0.4, 'reason': 'fine'}"
    assert verdict("python", result) == (True, 0.4)
    assert verdict("python", result, threshold=0.5) == (False, 0.4)
    assert verdict("python", "'true'") == (True, 1)
    assert verdict("python", "'0.25'") == (True, 0.25)
    assert verdict("python", "None") == (False, 0)  # not readable: a fail


def test_a_javascript_grading_result_keeps_its_pass_at_any_threshold() -> None:
    result = "({pass: true, score: 0.4, reason: 'fine'})"
    assert verdict("javascript", result, threshold=0.5) == (True, 0.4)
    assert verdict("javascript", "({pass: true})") == (False, 0)  # no score, no reason
    assert verdict("javascript", "'text'") == (False, 0)

"""npm's `promptfoo eval` and `evalrelay run` on the same config, against the same
loopback model (parity_model.py): for every test the same pass or fail and the same
score, for every assertion the same pass or fail, and the same request bodies sent to
the model under test. Each assertion carries a `metric`, the name both tools report it
under; each test a `description`, which names it in both."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
import redis

from tests.bridge.cli.test_run import run
from tests.bridge.evalfile.promptfoo.parity_model import GRADE, parity_model
from tests.conftest import Processes, read_jsonl
from tests.promptfoo_cli import promptfoo_bin
from tests.worker.providers.vendor_server import Seen

CONFIGS = Path(__file__).parent / "parity"
KEY = "sk-parity-0123456789"

Verdicts = dict[str, tuple[bool, float]]
"""Test description → (pass, score)."""
Components = dict[tuple[str, str], bool]
"""(test description, metric) → the assertion's pass."""


def promptfoo_run(folder: Path) -> tuple[Verdicts, Components]:
    out = folder / "promptfoo-results.json"
    env = {
        **os.environ,
        "OPENAI_API_KEY": KEY,
        "PROMPTFOO_DISABLE_TELEMETRY": "1",
        "PROMPTFOO_DISABLE_UPDATE": "1",
        "PROMPTFOO_DISABLE_SHARING": "1",
        "PROMPTFOO_CONFIG_DIR": str(folder / ".promptfoo"),
    }
    done = subprocess.run(
        [str(promptfoo_bin() / "promptfoo"), "eval", "-c", "promptfooconfig.yaml", "-o",
         str(out), "--no-cache", "--no-progress-bar", "--no-table", "-j", "4"],
        cwd=folder, env=env, capture_output=True, text=True, timeout=300, check=False,
    )  # fmt: skip
    assert out.is_file(), done.stderr
    tests: Verdicts = {}
    components: Components = {}
    for result in json.loads(out.read_text())["results"]["results"]:
        description = result["testCase"]["description"]
        assert result["gradingResult"], result.get("error")
        tests[description] = (result["success"], result["score"])
        for component in result["gradingResult"]["componentResults"]:
            made_by = component.get("assertion") or component["metadata"]["assertionSet"]
            metric = made_by.get("metric")  # an assertion's, or an assertion set's
            if metric:
                components[(description, metric)] = component["pass"]
    return tests, components


def evalrelay_run(
    folder: Path, processes: Processes, client: redis.Redis
) -> tuple[Verdicts, Components]:
    processes.worker(client, "w1@parity", extra_env={"OPENAI_API_KEY": KEY})
    done = run("promptfooconfig.yaml", "--out", "out", env=processes.env, cwd=folder)
    assert done.returncode in (0, 1), done.stderr  # 1: some cases fail, as they must
    lines = read_jsonl(next((folder / "out").glob("*.jsonl")))
    assert {line["target"] for line in lines} == {"model"}
    tests: Verdicts = {}
    components: Components = {}
    for line in lines:
        assert line["status"] in ("ok", "model_failure"), line
        description = str(line["case_id"]).split("-", 2)[2].replace("-", " ")
        tests[description] = (bool(line["passed"]), float(line["score"]))
        for evaluator in line["evaluator_results"]:
            assert evaluator["error"] is None, evaluator
            components[(description, evaluator["name"])] = own_pass(evaluator)
    return tests, components


def own_pass(evaluator: dict[str, Any]) -> bool:
    """An evaluator's pass as promptfoo grading reads it (worker.grading.passes)."""
    if evaluator["weight"] == 0 and evaluator["type"] != "composite":
        return True
    if evaluator["passed"] is not None:
        return bool(evaluator["passed"])
    return float(evaluator["score"]) >= 1.0


def asked_of_the_model(seen: list[Seen]) -> Counter[str]:
    """The chat requests to the model under test (not a grader's, not embeddings), each
    body as canonical JSON, counted."""
    bodies = [
        json.dumps(whole_numbers(s.body), sort_keys=True)
        for s in seen
        if s.path.endswith("/chat/completions") and not GRADE.search(json.dumps(s.body))
    ]
    return Counter(bodies)


def whole_numbers(value: Any) -> Any:
    """JSON with 0.0 written as 0: the same number, as both tools' servers read it."""
    if isinstance(value, float) and value.is_integer():
        return int(value)
    if isinstance(value, dict):
        return {k: whole_numbers(v) for k, v in value.items()}
    if isinstance(value, list):
        return [whole_numbers(v) for v in value]
    return value


def embedded(seen: list[Seen]) -> set[str]:
    """The texts sent to be embedded, each with its model (promptfoo embeds the answer
    once per value of a `similar`, evalrelay once per assertion: the same requests)."""
    return {json.dumps(s.body, sort_keys=True) for s in seen if s.path.endswith("/embeddings")}


def project(tmp_path: Path, url: str) -> Path:
    folder = tmp_path / "project"
    shutil.copytree(CONFIGS, folder)
    config = folder / "promptfooconfig.yaml"
    config.write_text(config.read_text().replace("LOOPBACK_URL", url))
    (folder / "evalrelay.yaml").write_text("")
    return folder


def test_promptfoo_and_evalrelay_agree_on_every_test_and_assertion(
    tmp_path: Path, processes: Processes, client: redis.Redis
) -> None:
    with parity_model() as model:
        folder = project(tmp_path, model.url)
        expected_tests, expected_components = promptfoo_run(folder)
        promptfoo_asked = asked_of_the_model(model.seen)
        promptfoo_embedded = embedded(model.seen)
        model.seen.clear()
        got_tests, got_components = evalrelay_run(folder, processes, client)
        evalrelay_asked = asked_of_the_model(model.seen)
        evalrelay_embedded = embedded(model.seen)

    assert set(got_tests) == set(expected_tests)
    for description, (passed, score) in expected_tests.items():
        got_passed, got_score = got_tests[description]
        assert got_passed == passed, (description, got_tests[description], passed, score)
        assert got_score == pytest.approx(score, abs=0.001), (description, got_score, score)
    assert got_components == expected_components
    assert evalrelay_asked == promptfoo_asked
    assert evalrelay_embedded == promptfoo_embedded and len(promptfoo_embedded) == 5

    # The cases the issue found, as promptfoo decides them.
    assert expected_tests["weighted contains"][0] is False  # any assertion failing fails
    assert expected_tests["five icontains one failing"][0] is False
    assert expected_tests["weighted with threshold"][0] is True
    assert expected_tests["rubric grader passes a low score"][0] is True  # the grader's pass
    assert expected_components[("script numbers are scores", "js-point-three")] is True
    assert expected_components[("similar answers", "similar-same")] is True  # was unsupported
    assert expected_components[("similar answers", "similar-far")] is False
    measured = {
        metric: passed
        for (test, metric), passed in expected_components.items()
        if test == "similar measures" and metric != "default-not-icontains"
    }  # similar:dot and similar:euclidean, and their not- forms, each way
    assert measured == {
        "cosine-at-threshold": True,
        "dot-same": True,
        "dot-far": False,
        "dot-at-threshold": True,
        "not-dot-far": True,
        "euclidean-same": True,
        "euclidean-far": False,
        "euclidean-any": True,
        "not-euclidean-far": True,
        "not-euclidean-any": False,
    }
    assert expected_components[("regex on lines", "regex-start-of-answer-only")] is False
    assert expected_components[("closed questions and facts", "closedqa-yes")] is True
    python_graded = {
        metric: expected_components[("custom python grader provider", metric)]
        for metric in ("py-judged-cat", "py-judged-dog", "py-judged-threshold")
    }  # a Python provider file as the grader: its pass, and its score under a threshold
    assert python_graded == {
        "py-judged-cat": True,
        "py-judged-dog": False,
        "py-judged-threshold": False,
    }
    assert expected_components[("custom python grader provider", "py-judged-function")] is False
    assert all('"role": "system"' not in body for body in promptfoo_asked)  # none added
    assert len(expected_components) > 80
    assert False in expected_components.values() and True in expected_components.values()

"""Answer transforms run before an evaluator grades: each step's output feeds the next,
and a step that fails ends that evaluator (only it) with an error naming the step."""

from __future__ import annotations

import sys

from pydantic import TypeAdapter

from evalrelay.bridge.evalfile.evaluators import EvaluatorSpec
from evalrelay.worker.grading.grade import grade
from tests.conftest import direct_job


def step(code: str) -> dict[str, object]:
    """A Python transform: `value` is the output so far; what `code` evaluates to is printed."""
    program = f"import json,sys; value=json.load(sys.stdin)['output']; print(json.dumps({code}))"
    return {"command": [sys.executable, "-c", program]}


def spec(entry: dict[str, object]) -> EvaluatorSpec:
    return TypeAdapter(EvaluatorSpec).validate_python(entry)


def test_steps_chain_and_a_non_string_is_graded_as_its_json() -> None:
    chained = spec({
        "type": "equals",
        "value": '{"n":6,"w":"ANSWER"}',
        "transforms": [step("{'output': value.upper()}"),
                       step("{'output': {'n': len(value), 'w': value}}")],
    })  # fmt: skip
    untouched = spec({"type": "equals", "value": "answer"})
    graded = grade(direct_job(evaluators=[chained, untouched]), "answer")
    assert graded is not None
    assert [r.score for r in graded.evaluator_results] == [1.0, 1.0]


def test_a_failing_step_fails_its_evaluator_and_says_which_step() -> None:
    failing = spec({
        "type": "contains",
        "value": "x",
        "name": "has-x",
        "transforms": [step("{'output': value}"), step("{'error': 'the transform threw: boom'}")],
    })  # fmt: skip
    graded = grade(direct_job(evaluators=[failing, spec({"type": "contains", "value": "a"})]), "a")
    assert graded is not None
    broken, kept = graded.evaluator_results
    assert broken.error == "evaluator has-x: transform 2 of 2: the transform threw: boom"
    assert kept.score == 1.0

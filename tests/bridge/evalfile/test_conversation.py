"""Conversation mode as written: AgentV's suite (`mode: conversation`, `turns` with their
own `assert`, `aggregation`, `on_turn_failure`) and the `evalcases` spelling; mistakes
are errors at their line."""

from __future__ import annotations

import pytest
from click.testing import CliRunner

from evalrelay.bridge.cli.main import cli
from evalrelay.bridge.errors import InvalidFileError, TargetError
from evalrelay.bridge.evalfile.cases import load_eval_file
from evalrelay.bridge.planning.campaigns import plan_jobs
from tests.conftest import WriteFiles

TARGETS = """\
targets:
  - {name: llm, provider: mock}
  - {name: coder, provider: codex}
"""

SUITE = """\
description: Live multi-turn conversation evaluation with per-turn grading
providers: [llm]
prompts: ["{{ input }}"]
tests:
  - id: weakest-link
    mode: conversation
    aggregation: min
    on_turn_failure: stop
    assert:
      - Agent provides accurate, well-structured responses
    turns:
      - input: What is the capital of {{ country }}?
        expected_output: Paris
        assert:
          - Correctly identifies Paris
          - type: contains
            value: Paris
      - input: What country is it in?
    vars:
      country: France
      input:
        - role: system
          content: You are a concise geography expert.
"""


def test_an_agentv_conversation_suite_plans_one_job_with_its_turns(project: WriteFiles) -> None:
    root = project({"targets.yaml": TARGETS, "evals/suite.yaml": SUITE})
    (job,) = plan_jobs("c", [load_eval_file(root / "evals/suite.yaml")], None, None)
    plan = job.conversation
    assert plan is not None
    assert (plan.aggregation, plan.on_turn_failure) == ("min", "stop")
    assert [t.input for t in plan.turns] == [
        "What is the capital of France?",
        "What country is it in?",
    ]
    first, second = plan.turns
    assert first.reference_answer == "Paris"
    # strings become one rubric, as AgentV groups them; structured asserts stay as they are
    assert [e.type for e in first.evaluators] == ["rubric", "contains"]
    assert second.evaluators == []
    # the case's own assert grades the whole conversation
    assert [e.type for e in job.evaluators] == ["rubric"]
    assert [m.role for m in job.request.chat_prompt or []] == ["system"]


def test_defaults_are_agentvs_mean_and_continue(project: WriteFiles) -> None:
    text = SUITE.replace("    aggregation: min\n", "").replace("    on_turn_failure: stop\n", "")
    root = project({"targets.yaml": TARGETS, "evals/suite.yaml": text})
    (job,) = plan_jobs("c", [load_eval_file(root / "evals/suite.yaml")], None, None)
    assert job.conversation is not None
    assert (job.conversation.aggregation, job.conversation.on_turn_failure) == (
        "mean",
        "continue",
    )


@pytest.mark.parametrize(
    ("change", "written", "message"),
    [
        (
            ("aggregation: min", "aggregation: median"),
            "    aggregation: median",
            "Input should be 'mean', 'min' or 'max'",
        ),
        (
            ("    mode: conversation\n", ""),
            "  - id: weakest-link",
            "`turns`, `aggregation` and `on_turn_failure` need `mode: conversation`",
        ),
        (
            ("      - input: What country", "      - inptu: What country"),
            "      - inptu: What country is it in?",
            "unknown key 'inptu'",
        ),
    ],
)
def test_a_mistake_in_a_conversation_is_an_error_at_its_line(
    project: WriteFiles, change: tuple[str, str], written: str, message: str
) -> None:
    bad = SUITE.replace(*change)
    assert bad != SUITE
    root = project({"targets.yaml": TARGETS, "evals/suite.yaml": bad})
    with pytest.raises(InvalidFileError) as caught:
        load_eval_file(root / "evals/suite.yaml")
    problems = caught.value.diagnostics
    assert {p.line for p in problems} == {bad.splitlines().index(written) + 1}
    assert any(message in p.message for p in problems), problems
    assert {p.case_id for p in problems} == {"weakest-link"}


def test_conversation_mode_needs_turns(project: WriteFiles) -> None:
    text = """\
evalcases:
  - id: talk
    mode: conversation
    input_messages: [{role: system, content: Be brief.}]
"""
    root = project({"targets.yaml": TARGETS, "evals.yaml": text})
    with pytest.raises(InvalidFileError) as caught:
        load_eval_file(root / "evals.yaml")
    (problem,) = caught.value.diagnostics
    assert "`mode: conversation` needs `turns`" in problem.message
    assert problem.line == 2


def test_a_conversation_on_an_agent_target_is_refused_when_planned(project: WriteFiles) -> None:
    root = project({"targets.yaml": TARGETS, "evals/suite.yaml": SUITE})
    with pytest.raises(TargetError, match="conversation mode runs on API targets"):
        plan_jobs("c", [load_eval_file(root / "evals/suite.yaml")], "coder", None)


def test_validate_checks_a_turns_evaluators_as_a_cases(project: WriteFiles) -> None:
    """A turn's unknown judge is a note at its line, as a case's is (an operator's file:
    `run` ends that evaluator's jobs as infra errors); one evalrelay cannot run, a note."""
    text = """\
evalcases:
  - id: talk
    mode: conversation
    input_messages: [{role: system, content: Be brief.}]
    turns:
      - input: hi
        evaluators:
          - {type: llm_judge, target: nobody}
"""
    root = project({"targets.yaml": TARGETS, "evals.yaml": text})
    done = CliRunner().invoke(cli, ["validate", str(root / "evals.yaml")])
    assert done.exit_code == 0, done.stdout
    (note,) = [line for line in done.stdout.splitlines() if "nobody" in line]
    assert note.startswith(f"{root}/evals.yaml:8:39: note: case 'talk': judge ")
    suite = SUITE.replace("          - type: contains\n", "          - type: skill-used\n")
    root = project({"evals/suite.yaml": suite})
    notes = load_eval_file(root / "evals/suite.yaml").notes
    assert any("skill-used" in n and "weakest-link" in n for n in notes), notes

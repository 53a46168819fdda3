"""AgentV's January-2026 eval format: `execution` blocks, `expected_outcome`, object
content, trace-style tool calls, message names; precedence and the reference answer
as AgentV has them."""

from __future__ import annotations

import json

import pytest

from evalrelay.bridge.errors import InvalidFileError
from evalrelay.bridge.evalfile.cases import load_eval_file
from evalrelay.bridge.planning.campaigns import plan_jobs
from tests.conftest import WriteFiles

TARGETS = "targets:\n  - {name: default, provider: mock}\n  - {name: other, provider: mock}\n"

EVAL = """\
description: a suite in AgentV's January-2026 shape
target: other
execution:
  target: default
  evaluators:
    - {name: file-level, type: contains, value: file}
evalcases:
  - id: both-lists
    description: the case's own execution.evaluators win over its evaluators
    expected_outcome: Says hello.
    input_messages:
      - {role: user, name: alice, content: hello}
    evaluators:
      - {name: plain, type: contains, value: plain}
    execution:
      evaluators:
        - {name: execution, type: contains, value: execution}
    expected_messages:
      - {role: assistant, content: first answer}
      - {role: assistant, content: last answer}
  - id: object-content
    input_messages:
      - role: user
        content: {riskLevel: high, items: [1, 2]}
    expected_messages:
      - role: assistant
        tool_calls:
          - {tool: search, input: {q: evalrelay}, output: found}
      - {role: assistant, content: done}
"""


def test_the_january_2026_shape_loads_with_agentvs_precedence(project: WriteFiles) -> None:
    root = project({"targets.yaml": TARGETS, "evals/suite.yaml": EVAL})
    loaded = load_eval_file(root / "evals/suite.yaml")
    first, second = plan_jobs("c", [loaded], None, None)

    assert first.target.name == "default"  # execution.target over the top-level target
    assert [e.name for e in first.evaluators] == ["execution"]
    assert [e.name for e in second.evaluators] == ["file-level"]
    assert first.outcome == "Says hello."
    assert first.reference_answer == "last answer"  # the last expected message

    question = second.request.question
    assert json.loads(question) == {"riskLevel": "high", "items": [1, 2]}
    (call,) = loaded.cases[1].expected[0].tool_calls
    assert (call.name, call.arguments, call.output) == ("search", {"q": "evalrelay"}, "found")
    assert loaded.cases[0].case.input_messages[0].name == "alice"


def test_a_key_of_another_kind_of_message_is_not_a_did_you_mean_of_itself(
    project: WriteFiles,
) -> None:
    root = project(
        {
            "evals/bad.yaml": "evalcases:\n  - id: a\n    input_messages:\n"
            "      - {role: user, content: hi, tool_calls: []}\n"
        }
    )
    with pytest.raises(InvalidFileError) as raised:
        load_eval_file(root / "evals/bad.yaml")
    (problem,) = raised.value.diagnostics
    assert problem.message.endswith(
        "key 'tool_calls' in evalcases[0].input_messages[0] is not allowed on a 'user' entry"
    )
    assert "did you mean" not in problem.message


def test_yaml_merge_keys_bring_in_pairs_that_own_keys_override(project: WriteFiles) -> None:
    root = project(
        {
            "evals/merge.yaml": (
                "evalcases:\n"
                "  - &base\n"
                "    id: a\n"
                "    input_messages: [{role: user, content: hi}]\n"
                "  - <<: *base\n"
                "    id: b\n"
            )
        }
    )
    loaded = load_eval_file(root / "evals/merge.yaml")
    assert [c.id for c in loaded.cases] == ["a", "b"]
    assert loaded.cases[1].case.input_messages == loaded.cases[0].case.input_messages


def test_a_code_judge_that_asks_for_an_llm_proxy_loads_and_its_cases_are_told_why(
    project: WriteFiles,
) -> None:
    root = project(
        {
            "targets.yaml": TARGETS,
            "evals/proxy.yaml": """\
execution:
  evaluators:
    - {name: precision, type: code_judge, script: [bun, run, p.ts], target: {max_calls: 10}}
evalcases:
  - {id: one, input_messages: [{role: user, content: hi}]}
  - {id: two, input_messages: [{role: user, content: hi}]}
""",
        }
    )
    loaded = load_eval_file(root / "evals/proxy.yaml")
    (note,) = loaded.notes
    assert note.startswith("evaluator precision cannot run here (`target` asks for AgentV's")
    assert note.endswith("cases one, two will end as infra_error")
    job = plan_jobs("c", [loaded], "default", None)[0]
    (evaluator,) = job.evaluators
    assert (evaluator.type, evaluator.name) == ("unsupported", "precision")

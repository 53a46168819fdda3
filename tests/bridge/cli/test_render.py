"""`evalrelay render --target`: the vendor body a worker would send, and never a key."""

from __future__ import annotations

import json
from typing import Any

import pytest
from click.testing import CliRunner

from evalrelay.bridge.cli.main import cli
from tests.conftest import WriteFiles

TARGETS = """\
targets:
  - {name: gpt, provider: openai, model: gpt-5, api: responses}
  - {name: claude, provider: anthropic, model: claude-sonnet-4-5, max_output_tokens: 100}
  - {name: gem, provider: gemini, model: gemini-2.5-pro, system_prompt: Target prompt}
  - {name: local, provider: openai-compatible, base_url: "http://127.0.0.1:1/v1", model: q,
     max_output_tokens: 7, api_key: "${LOCAL_KEY}"}
  - {name: agent, provider: codex}
"""
CASE = """\
evalcases:
  - id: chat
    input_messages:
      - {role: user, content: Hi}
      - {role: assistant, content: Hello}
      - {role: user, content: Bye}
"""


def render(project: WriteFiles, target: str, env: dict[str, str] | None = None) -> dict[str, Any]:
    root = project({"targets.yaml": TARGETS, "case.yaml": CASE})
    result = CliRunner(env=env).invoke(
        cli, ["render", "--json", "--target", target, str(root / "case.yaml")]
    )
    assert result.exit_code == 0, result.output
    record: dict[str, Any] = json.loads(result.output)
    return record


def test_openai_responses_wire(project: WriteFiles) -> None:
    assert render(project, "gpt")["wire"] == {
        "model": "gpt-5",
        "instructions": "You are a careful assistant.",
        "input": [
            {"role": "user", "content": "Hi"},
            {"role": "assistant", "content": "Hello"},
            {"role": "user", "content": "Bye"},
        ],
    }


def test_anthropic_wire(project: WriteFiles) -> None:
    assert render(project, "claude")["wire"] == {
        "model": "claude-sonnet-4-5",
        "max_tokens": 100,
        "system": "You are a careful assistant.",
        "messages": [
            {"role": "user", "content": "Hi"},
            {"role": "assistant", "content": "Hello"},
            {"role": "user", "content": "Bye"},
        ],
    }


def test_target_system_prompt_reaches_the_wire(project: WriteFiles) -> None:
    record = render(project, "gem")
    assert record["api_messages"][0] == {"role": "system", "content": "Target prompt"}
    assert record["wire"]["systemInstruction"] == {"parts": [{"text": "Target prompt"}]}


def test_openai_compatible_uses_max_tokens_and_never_prints_the_key(project: WriteFiles) -> None:
    record = render(project, "local", env={"LOCAL_KEY": "sk-very-secret-value"})
    assert record["wire"]["max_tokens"] == 7
    assert "sk-very-secret-value" not in json.dumps(record)


def test_agent_target_has_no_wire_body(project: WriteFiles) -> None:
    assert render(project, "agent")["wire"] is None


@pytest.mark.parametrize("as_json", [True, False])
def test_unknown_target_is_one_clear_error(project: WriteFiles, as_json: bool) -> None:
    root = project({"targets.yaml": TARGETS, "case.yaml": CASE})
    args = ["render", "--target", "nope", str(root / "case.yaml")] + (["--json"] if as_json else [])
    result = CliRunner().invoke(cli, args)
    assert result.exit_code == 1
    assert "unknown target 'nope'" in str(result.exception)


def test_readable_view_shows_question_and_messages(project: WriteFiles) -> None:
    root = project({"case.yaml": CASE})
    result = CliRunner().invoke(cli, ["render", str(root / "case.yaml")])
    assert result.exit_code == 0
    assert "[User]: Hi" in result.output
    assert "[assistant] Hello" in result.output


TOOL_CASE = """\
tools:
  - {name: weather, description: Current weather, parameters: {type: object, properties: {}}}
evalcases:
  - id: tools
    input_messages: [{role: user, content: Weather?}]
    tool_choice: {name: weather}
"""


@pytest.mark.parametrize(
    ("target", "wire"),
    [
        (
            "gpt",
            {
                "tools": [
                    {
                        "type": "function",
                        "name": "weather",
                        "description": "Current weather",
                        "parameters": {"type": "object", "properties": {}},
                        "strict": False,
                    }
                ],
                "tool_choice": {"type": "function", "name": "weather"},
            },
        ),
        (
            "claude",
            {
                "tools": [
                    {
                        "name": "weather",
                        "input_schema": {"type": "object", "properties": {}},
                        "description": "Current weather",
                    }
                ],
                "tool_choice": {"type": "tool", "name": "weather"},
            },
        ),
        (
            "gem",
            {
                "tools": [
                    {
                        "functionDeclarations": [
                            {
                                "name": "weather",
                                "description": "Current weather",
                                "parametersJsonSchema": {"type": "object", "properties": {}},
                            }
                        ]
                    }
                ],
                "toolConfig": {
                    "functionCallingConfig": {"mode": "ANY", "allowedFunctionNames": ["weather"]}
                },
            },
        ),
    ],
)
def test_tools_and_their_wire_shape_are_shown(
    project: WriteFiles, target: str, wire: dict[str, Any]
) -> None:
    root = project({"targets.yaml": TARGETS, "tools.yaml": TOOL_CASE})
    result = CliRunner().invoke(
        cli, ["render", "--json", "--target", target, str(root / "tools.yaml")]
    )
    assert result.exit_code == 0, result.output
    record = json.loads(result.output)
    assert record["tools"] == [
        {
            "name": "weather",
            "description": "Current weather",
            "parameters": {"type": "object", "properties": {}},
        }
    ]
    assert record["tool_choice"] == {"name": "weather"}
    assert {k: v for k, v in record["wire"].items() if k in wire} == wire
    readable = CliRunner().invoke(cli, ["render", "--target", target, str(root / "tools.yaml")])
    assert "weather{}  Current weather" in readable.output
    assert 'tool_choice: {"name": "weather"}' in readable.output


TALK = """\
evalcases:
  - id: tutor
    mode: conversation
    on_turn_failure: stop
    input_messages: [{role: system, content: Be a tutor.}]
    turns:
      - input: What is 15% of 200?
        expected_output: "30"
        evaluators: [{type: contains, value: "30"}]
      - input: Now double that.
"""


def test_a_conversation_shows_its_turns(project: WriteFiles) -> None:
    root = project({"case.yaml": TALK})
    shown = CliRunner().invoke(cli, ["render", str(root / "case.yaml")])
    assert shown.exit_code == 0, shown.output
    text = " ".join(shown.output.replace("│", " ").split())
    assert "aggregation mean, on_turn_failure stop" in text
    assert "turn 1 [user] What is 15% of 200? expected: 30 evaluators: contains" in text
    assert "turn 2 [user] Now double that. evaluators: none (scores 1)" in text
    record = json.loads(
        CliRunner().invoke(cli, ["render", "--json", str(root / "case.yaml")]).output
    )
    assert record["conversation"]["turns"] == [
        {
            "turn": 1,
            "input": "What is 15% of 200?",
            "expected_output": "30",
            "evaluators": ["contains"],
        },
        {"turn": 2, "input": "Now double that.", "expected_output": None, "evaluators": []},
    ]
    assert render(project, "gpt")["conversation"] is None  # not a conversation


def test_an_agent_target_shows_its_task_md_with_the_files_where_the_prompt_says(
    project: WriteFiles,
) -> None:
    """`./src/x.py` attached from evals/case.yaml is labelled `=== ./src/x.py ===` in the
    question, and the task.md names it at `inputs/src/x.py`, where the workspace holds it."""
    case = (
        "evalcases:\n  - id: fix\n    input_messages:\n      - role: user\n        content:\n"
        "          - {type: text, value: Fix it}\n          - {type: file, value: ./src/x.py}\n"
    )
    root = project(
        {"targets.yaml": TARGETS, "evals/case.yaml": case, "evals/src/x.py": "print(1)\n"}
    )
    args = ["render", "--json", "--target", "agent", str(root / "evals" / "case.yaml")]
    result = CliRunner().invoke(cli, args)
    assert result.exit_code == 0, result.output
    record = json.loads(result.output)
    assert "=== ./src/x.py ===\nprint(1)" in record["question"]
    assert "- `inputs/src/x.py`" in record["task_md"]
    assert "Fix it" in record["task_md"]
    assert render(project, "gpt")["task_md"] is None  # an API target has none
    shown = CliRunner().invoke(cli, [*[a for a in args if a != "--json"]])
    assert "task.md (this agent target)" in shown.output
    assert "inputs/src/x.py" in shown.output

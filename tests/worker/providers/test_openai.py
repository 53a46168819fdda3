"""The OpenAI Chat Completions wire against a real OpenAI-compatible server: llama.cpp's
(llama-cpp-python) serving a real model, through `evalrelay run`, a real queue and worker."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.bridge.cli.test_run import run
from tests.conftest import WriteFiles, embedded_env, read_jsonl
from tests.worker.providers.real_llama import llama_server

TOOL_HISTORY = """\
evalcases:
  - id: tool-turn-without-text
    input_messages:
      - {role: system, content: You answer in a few words.}
      - {role: user, content: "What is the weather in Paris?"}
      - role: assistant
        tool_calls: [{id: call-1, name: weather, arguments: {city: Paris}}]
      - {role: tool, tool_call_id: call-1, content: '{"temp_c": 21, "sky": "clear"}'}
      - {role: user, content: "So, is it warm?"}
  - id: trace-style-calls-and-object-content
    input_messages:
      - {role: user, content: {task: summarise, items: [1, 2]}}
      - role: assistant
        content: Looking it up.
        tool_calls: [{tool: search, input: {q: items}, output: found two}]
      - {role: user, content: "Thanks. One word answer?"}
  - id: plain
    input_messages:
      - {role: user, content: Say hello.}
"""


@pytest.fixture(scope="module")
def llama_targets(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """targets.yaml naming the real server as `llama`; one server for the module's tests,
    as it takes a while to start."""
    log = tmp_path_factory.mktemp("llama") / "llama.log"
    with llama_server(log) as base_url:
        yield (
            "targets:\n  - {name: llama, provider: openai-compatible, model: smollm2, "
            f"base_url: '{base_url}', temperature: 0, max_output_tokens: 16}}\n"
        )


def test_a_campaign_with_tool_call_turns_runs_ok_on_a_real_llama_server(
    project: WriteFiles, private_home: Path, llama_targets: str
) -> None:
    root = project({"targets.yaml": llama_targets, "evals/tools.yaml": TOOL_HISTORY})
    done = run("evals/tools.yaml", "--target", "llama", env=embedded_env(private_home), cwd=root)
    assert done.returncode == 0, done.stderr
    (jsonl,) = (root / "results").glob("*.jsonl")
    lines = read_jsonl(jsonl)
    assert {str(line["case_id"]): line["status"] for line in lines} == {
        "tool-turn-without-text": "ok",
        "trace-style-calls-and-object-content": "ok",
        "plain": "ok",
    }, [line.get("error") for line in lines]
    assert all(str(line["answer"]).strip() for line in lines)


CONVERSATION = """\
evalcases:
  - id: counting
    mode: conversation
    aggregation: min
    input_messages: [{role: system, content: You answer in a few words.}]
    turns:
      - input: Name a fruit.
        evaluators: [{type: regex, value: "\\\\w"}]
      - input: Name another one.
        evaluators: [{type: contains, value: "zz-never-said"}]
      - input: Which did you name first?
        evaluators: [{type: regex, value: "\\\\w"}]
"""


def test_a_conversation_runs_turn_by_turn_on_a_real_llama_server(
    project: WriteFiles, private_home: Path, llama_targets: str
) -> None:
    """Each turn is a real call answered by the model, and graded on its own."""
    root = project({"targets.yaml": llama_targets, "evals/talk.yaml": CONVERSATION})
    done = run("evals/talk.yaml", "--target", "llama", env=embedded_env(private_home), cwd=root)
    assert done.returncode == 1, done.stderr  # turn 2 fails, and min makes the case fail
    ((jsonl,),) = [list((root / "results").glob("*.jsonl"))]
    (line,) = read_jsonl(jsonl)
    assert line["status"] == "ok", line["error"]
    turns = line["turns"]
    assert isinstance(turns, list)
    assert [t["status"] for t in turns] == ["ok", "ok", "ok"]
    assert all(str(t["answer"]).strip() for t in turns)
    assert [t["passed"] for t in turns] == [True, False, True]
    assert line["score"] == 0.0 and line["passed"] is False
    assert line["answer"] == turns[2]["answer"]
    assert len(line["artifacts"]["calls"]) == 3  # type: ignore[index]

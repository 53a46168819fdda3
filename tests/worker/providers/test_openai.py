"""The OpenAI Chat Completions wire against a real OpenAI-compatible server: llama.cpp's
(llama-cpp-python) serving a real model, through `evalrelay run`, a real queue and worker."""

from __future__ import annotations

from pathlib import Path

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


def test_a_campaign_with_tool_call_turns_runs_ok_on_a_real_llama_server(
    project: WriteFiles, private_home: Path, tmp_path: Path
) -> None:
    with llama_server(tmp_path / "llama.log") as base_url:
        targets = (
            "targets:\n  - {name: llama, provider: openai-compatible, model: smollm2, "
            f"base_url: '{base_url}', temperature: 0, max_output_tokens: 16}}\n"
        )
        root = project({"targets.yaml": targets, "evals/tools.yaml": TOOL_HISTORY})
        done = run(
            "evals/tools.yaml", "--target", "llama", env=embedded_env(private_home), cwd=root
        )
    assert done.returncode == 0, done.stderr
    (jsonl,) = (root / "results").glob("*.jsonl")
    lines = read_jsonl(jsonl)
    assert {str(line["case_id"]): line["status"] for line in lines} == {
        "tool-turn-without-text": "ok",
        "trace-style-calls-and-object-content": "ok",
        "plain": "ok",
    }, [line.get("error") for line in lines]
    assert all(str(line["answer"]).strip() for line in lines)

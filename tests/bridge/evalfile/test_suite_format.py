"""AgentV's July 2026 suite format, read as evalcases: prompts rendered with vars, asserts
as evaluators, metadata kept, and errors at the line the author wrote."""

from __future__ import annotations

from pathlib import Path

import pytest

from evalrelay.bridge.errors import InvalidFileError
from evalrelay.bridge.evalfile.cases import SUITE_FORMAT, load_eval_file
from evalrelay.bridge.planning.campaigns import plan_jobs
from tests.conftest import WriteFiles

TARGETS = "targets:\n  - {name: llm, provider: mock, judge_target: llm}\n"

SUITE = """\
name: demo-suite
description: both prompts, every kind of assert we map
providers: [llm]
governance: &gov {owner: evals-team}
tags: [smoke]
prompts:
  - "{{ input }}"
  - id: terse
    prompt: "Answer for {{ audience }} in one line: {{ vars.input }}"
default_test:
  vars: {audience: users}
  assert:
    - type: icontains-any
      value: [paris, lyon]
tests:
  - id: capital
    metadata: {owner: geo, tags: [geo]}
    vars:
      input: What is the capital of France?
      expected_output: Paris
    assert:
      - Names Paris
      - type: contains
        value: London
        negate: true
        metric: no-london
      - States it briefly
      - type: regex
        value: "^paris"
        flags: i
      - type: not-trajectory:tool-used
        value: rm
      - type: min-words
  - id: chat
    conversation_id: conv-1
    vars:
      input:
        - {role: system, content: Be brief.}
        - {role: user, content: "Greet {{ vars.person }}"}
      person: Ada
    assert:
      - type: assert-set
        threshold: 0.5
        assert:
          - {type: starts-with, value: Hello}
          - {type: is-json}
"""


def test_a_suite_becomes_cases_for_each_prompt(project: WriteFiles) -> None:
    path = project({"targets.yaml": TARGETS, "evals/suite.yaml": SUITE}) / "evals/suite.yaml"
    loaded = load_eval_file(path)
    assert loaded.format == SUITE_FORMAT
    assert [c.id for c in loaded.cases] == [
        "capital__prompt_prompt-1",
        "capital__prompt_terse",
        "chat__prompt_prompt-1",
        "chat__prompt_terse",
    ]
    jobs = plan_jobs("c", [loaded], None, None)
    capital, terse, chat = jobs[0], jobs[1], jobs[2]
    assert capital.dataset == "demo-suite" and capital.target.name == "llm"
    assert capital.request.question == "What is the capital of France?"
    assert terse.request.question == "Answer for users in one line: What is the capital of France?"
    assert capital.reference_answer == "Paris"
    assert capital.metadata == {
        "governance": {"owner": "evals-team"},
        "tags": ["smoke", "geo"],
        "owner": "geo",
    }
    assert [(e.type, e.name) for e in capital.evaluators] == [
        ("rubric", "criteria"),
        ("contains", "no-london"),
        ("regex", None),
        ("trajectory", None),
        ("unsupported", None),
        ("icontains_any", None),  # default_test's asserts come after the test's own
    ]
    rubric = capital.evaluators[0]
    assert [r.description for r in rubric.rubrics] == ["Names Paris", "States it briefly"]  # type: ignore[union-attr]
    assert rubric.weight == 2
    assert capital.evaluators[1].negate is True
    # a message list in vars.input stays messages; vars inside it are rendered
    assert chat.conversation_id == "conv-1"
    assert [m.role for m in chat.request.chat_prompt or []] == ["system", "user"]
    assert (chat.request.chat_prompt or [])[-1].content == "Greet Ada"
    composite = chat.evaluators[0]
    assert composite.type == "composite" and composite.aggregator.type == "threshold"  # type: ignore[union-attr]


def test_an_error_names_the_line_written_in_the_suite(project: WriteFiles) -> None:
    bad = SUITE.replace("flags: i", "flags: q")
    path = project({"targets.yaml": TARGETS, "evals/suite.yaml": bad}) / "evals/suite.yaml"
    with pytest.raises(InvalidFileError) as caught:
        load_eval_file(path)
    lines = {d.line for d in caught.value.diagnostics}
    written = bad.splitlines().index("        flags: q") + 1  # the very key
    assert lines == {written}
    assert "unknown regex flag(s) q" in caught.value.diagnostics[0].message
    assert caught.value.diagnostics[0].case_id is not None


def test_secrets_in_env_templates_are_refused(
    project: WriteFiles, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-do-not-send")
    suite = (
        "prompts: ['{{ env.OPENAI_API_KEY }} {{ input }}']\n"
        "tests:\n  - {id: a, vars: {input: hi}}\n"
    )
    path = project({"evals/s.yaml": suite}) / "evals/s.yaml"
    with pytest.raises(InvalidFileError, match="looks like a secret"):
        load_eval_file(path)


def test_jsonl_dataset_reads_its_sidecar_and_names_lines(project: WriteFiles) -> None:
    lines = (
        '{"id": "a", "expected_outcome": "hi",'
        ' "input_messages": [{"role": "user", "content": "x"}]}\n'
        "\n"
        '{"id": "b", "input_messages": [{"role": "user", "content": "y"}], "bogus": 1}\n'
    )
    sidecar = "dataset: jsonl-demo\nexecution:\n  target: llm\n"
    root = project({"targets.yaml": TARGETS, "evals/d.jsonl": lines, "evals/d.yaml": sidecar})
    with pytest.raises(InvalidFileError) as caught:
        load_eval_file(root / "evals/d.jsonl")
    (problem,) = caught.value.diagnostics
    assert (problem.line, problem.case_id) == (3, "b") and "unknown key 'bogus'" in problem.message
    (root / "evals/d.jsonl").write_text(lines.replace(', "bogus": 1', ""))
    loaded = load_eval_file(root / "evals/d.jsonl")
    assert loaded.dataset == "jsonl-demo" and [c.id for c in loaded.cases] == ["a", "b"]
    assert plan_jobs("c", [loaded], None, None)[0].target.name == "llm"


def test_files_a_suite_names_stay_inside_the_project(project: WriteFiles, tmp_path: Path) -> None:
    (tmp_path / "outside.md").write_text("Grade {{ output }} harshly.")
    suite = (
        "prompts: ['{{ input }}']\n"
        "tests:\n"
        "  - id: a\n"
        "    vars: {input: hi}\n"
        "    assert:\n"
        "      - {type: llm-rubric, prompt: 'file://../../outside.md'}\n"
    )
    root = project({"evals/s.yaml": suite, "evals/judge.md": "Grade {{ output }}."})
    with pytest.raises(InvalidFileError) as caught:
        load_eval_file(root / "evals/s.yaml")
    (problem,) = caught.value.diagnostics
    assert problem.line == 6 and "outside" in problem.message
    (root / "evals/s.yaml").write_text(suite.replace("../../outside.md", "judge.md"))
    (job,) = plan_jobs("c", [load_eval_file(root / "evals/s.yaml")], "mock", None)
    assert job.evaluators[0].prompt == "Grade {{ output }}."  # type: ignore[union-attr]


def test_several_providers_run_each_test_on_each_without_renaming_it(
    project: WriteFiles,
) -> None:
    """`providers: [alpha, beta]`: one case per test, planned on both targets; the target is
    a field of each job, and mock `responses` keyed by the test's id match for both."""
    targets = (
        "targets:\n"
        "  - {name: alpha, provider: mock, responses: {math-1: '4'}}\n"
        "  - {name: beta, provider: mock, responses: {math-1: 'four'}}\n"
    )
    suite = (
        "providers: [alpha, beta]\n"
        "tests:\n"
        "  - {id: math-1, vars: {input: 2+2?}}\n"
        "  - {id: math-2, vars: {input: 3+3?}}\n"
    )
    root = project({"targets.yaml": targets, "suite.yaml": suite})
    loaded = load_eval_file(root / "suite.yaml")
    assert [c.id for c in loaded.cases] == ["math-1", "math-2"]
    jobs = plan_jobs("c", [loaded], None, None)
    assert [(j.case_id, j.target.name) for j in jobs] == [
        ("math-1", "alpha"), ("math-1", "beta"), ("math-2", "alpha"), ("math-2", "beta"),
    ]  # fmt: skip
    assert len({j.job_id for j in jobs}) == 4


def test_agentv_execution_targets_plan_each_case_on_each_target(project: WriteFiles) -> None:
    targets = "targets:\n  - {name: alpha, provider: mock}\n  - {name: beta, provider: mock}\n"
    evals = (
        "execution: {targets: [alpha, beta]}\n"
        "evalcases:\n"
        "  - {id: both, input_messages: [{role: user, content: hi}]}\n"
        "  - {id: own, target: beta, input_messages: [{role: user, content: hi}]}\n"
    )
    root = project({"targets.yaml": targets, "evals.yaml": evals})
    jobs = plan_jobs("c", [load_eval_file(root / "evals.yaml")], None, None)
    assert [(j.case_id, j.target.name) for j in jobs] == [
        ("both", "alpha"), ("both", "beta"), ("own", "beta"),
    ]  # fmt: skip

"""Planning a job's grading: judges resolved, prompt files read, script folders fixed."""

from __future__ import annotations

import pytest

from evalrelay.bridge.errors import TargetError
from evalrelay.bridge.evalfile.cases import load_eval_file
from evalrelay.bridge.evalfile.evaluators import CodeEvaluator, LlmJudgeEvaluator
from evalrelay.bridge.planning.campaigns import plan_jobs
from tests.conftest import WriteFiles

TARGETS = """\
targets:
  - {name: candidate, provider: mock, judge_target: judge}
  - {name: lone, provider: mock}
  - {name: judge, provider: openai, model: gpt-judge}
  - {name: strict, provider: anthropic, model: claude-judge}
  - {name: agent, provider: codex}
"""


def test_judges_prompts_and_script_folders_travel_in_the_job(project: WriteFiles) -> None:
    root = project(
        {
            "targets.yaml": TARGETS,
            "evals/cases.yaml": """\
                threshold: 0.6
                evalcases:
                  - id: a
                    input_messages: [{role: user, content: hi}]
                    evaluators:
                      - {type: llm_judge, target: strict, prompt: prompts/judge.md}
                      - {type: llm_judge}
                      - {type: code, script: python grade.py, cwd: graders}
                  - id: b
                    threshold: 0.95
                    input_messages: [{role: user, content: hi}]
            """,
            "evals/prompts/judge.md": "You grade greetings.\n",
        }
    )
    first, second = plan_jobs("c", [load_eval_file(root / "evals/cases.yaml")], "candidate", None)
    assert sorted(first.judges) == ["judge", "strict"]
    assert first.judges["strict"].settings["model"] == "claude-judge"
    assert first.default_judge == "judge"
    judge, _, script = first.evaluators
    assert isinstance(judge, LlmJudgeEvaluator) and judge.prompt == "You grade greetings.\n"
    assert isinstance(script, CodeEvaluator) and script.cwd == str(root / "evals" / "graders")
    assert (first.pass_threshold, second.pass_threshold) == (0.6, 0.95)
    # A case without evaluators is judged by the target's judge.
    assert second.evaluators == [] and list(second.judges) == ["judge"]


def test_who_judges_a_target_without_a_judge_target(project: WriteFiles) -> None:
    """An API target grades itself (AgentV's January rule), the project's default judge
    (AgentV's `defaults.grader`) comes first, a mock target gets the mock judge, and an
    agent target has none: refused when planning."""
    root = project(
        {
            "targets.yaml": TARGETS,
            "cases.yaml": """\
                evalcases:
                  - id: lonely
                    input_messages: [{role: user, content: hi}]
                    evaluators: [{type: llm_judge}]
            """,
        }
    )
    with pytest.raises(TargetError, match="case 'lonely': llm_judge has no judge: target 'agent'"):
        plan_jobs("c", [load_eval_file(root / "cases.yaml")], "agent", None)
    (job,) = plan_jobs("c", [load_eval_file(root / "cases.yaml")], "strict", None)
    assert job.default_judge == "strict" and list(job.judges) == ["strict"]
    (root / "evalrelay.yaml").unlink()  # AgentV's config is read when evalrelay.yaml is not there
    (root / ".git").mkdir()
    (root / ".agentv").mkdir()
    (root / ".agentv/config.yaml").write_text("defaults: file://defaults.yaml\n")
    (root / ".agentv/defaults.yaml").write_text("provider: lone\ngrader: judge\n")
    (job,) = plan_jobs("c", [load_eval_file(root / "cases.yaml")], "strict", None)
    assert job.default_judge == "judge" and list(job.judges) == ["judge"]
    (job,) = plan_jobs("c", [load_eval_file(root / "cases.yaml")], None, None)
    assert job.target.name == "lone"  # defaults.provider: the target when none is named
    # a mock target's answers are graded by the mock judge, so a dry run runs every step
    (job,) = plan_jobs("c", [load_eval_file(root / "cases.yaml")], "lone", None)
    assert job.default_judge == "mock-judge" and list(job.judges) == ["mock-judge"]

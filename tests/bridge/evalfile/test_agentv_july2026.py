"""AgentV's July 2026 eval files of the kinds evalrelay once refused (copies, at the paths
they have in AgentV's repository: tests/fixtures/agentv_july2026/README.md says which
commit). Only a file attaching a file missing from AgentV's own tree is refused."""

from __future__ import annotations

from pathlib import Path

from evalrelay.bridge.cli.validate import check_file
from evalrelay.bridge.evalfile.untrusted import Untrusted

AGENTV = Path(__file__).parents[2] / "fixtures" / "agentv_july2026"
BENCHMARK = AGENTV / "examples/showcase/offline-grader-benchmark"
RUN_DOES = "`run` ends its jobs as infra errors: define the target, or name another"


def test_judges_its_providers_file_lacks_are_notes_at_their_line() -> None:
    """AgentV resolves a judge only when it grades: the file is valid as written."""
    checked = check_file(BENCHMARK / "evals/setup-a.eval.yaml")
    assert checked.problems == []
    assert checked.cases == 5
    judges = [n for n in checked.notes if "judge unknown target" in n.message]
    assert [(n.line, n.column, n.case_id) for n in judges] == [(9, 5, None)] * 3
    named = {n.message.split("'")[1] for n in judges}
    assert named == {"grader_gpt_5_mini", "grader_claude_haiku", "grader_gemini_flash"}
    assert all(n.message.endswith(RUN_DOES) for n in judges)


def test_graders_named_by_a_promptfoo_export_are_notes_at_their_line() -> None:
    checked = check_file(AGENTV / "scripts/fixtures/promptfoo-export/oracle-matrix.agentv.yaml")
    assert checked.problems == []
    assert checked.cases == 3
    judges = {
        (n.line, n.column, n.case_id, n.message.split("'")[1])
        for n in checked.notes
        if "judge unknown target" in n.message
    }
    assert judges == {
        (38, 7, None, "grader-default"),
        (38, 7, "test-options-grader", "grader-test-options"),
        (64, 9, "assertion-provider-and-target-override", "grader-assertion"),
    }


def test_a_file_attaching_a_file_missing_from_agentvs_tree_is_refused() -> None:
    path = AGENTV / "evals/agentic-engineering/workspace-template/evals/deploy-auto"
    checked = check_file(path / "deploy-execute.eval.yaml")
    assert [(p.line, p.column, p.case_id) for p in checked.problems] == [
        (18, 22, "execute-plan"),
        (35, 22, "health-check-failure"),
        (45, 22, "run-tests"),
    ]
    assert all(
        "file '/plugins/deploy-auto/skills/deploy-execute/SKILL.md' not found" in p.message
        for p in checked.problems
    )


def test_dropped_in_an_inbox_the_same_file_is_refused_for_the_judges_it_names() -> None:
    """A stranger's file runs on the operator's judges only: naming one, known or not, is
    refused, and an unknown one is an error too."""
    checked = check_file(BENCHMARK / "evals/setup-a.eval.yaml", Untrusted(inbox=BENCHMARK))
    messages = [p.message for p in checked.problems]
    assert any(m.startswith("judge unknown target 'grader_gpt_5_mini'") for m in messages)
    assert any("`target`: names its judge (grader_gpt_5_mini)" in m for m in messages)

"""Codex, Claude Code and Copilot CLI, each scripted through aimock to read a file, run a
command and write a file: the result holds one ordered trajectory of the same kinds for
each, its tool calls graded by trajectory evaluators (one expectation met, a wrong one
failed), and what the agent changed in its workspace, diffed and graded."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import redis

from evalrelay.bridge.results.result import Status
from evalrelay.worker.execute import execute
from tests.conftest import WriteFiles
from tests.worker.providers.agent_cases import ATTACHED, ATTACHED_TEXT, planned_job
from tests.worker.providers.real_agents import AIMOCK_KEY, agents_bin, aimock
from tests.worker.providers.test_claude_code import claude_targets
from tests.worker.providers.test_codex import codex_targets
from tests.worker.providers.test_copilot_cli import copilot_targets

NOTE = "chores done"


def chores(read: dict[str, Any], command: dict[str, Any], edit: dict[str, Any]) -> list[Any]:
    """aimock fixtures: "Do the chores" asks for `read`; the attachment's text coming back
    asks for `command`; the command's output (`RAN-42`) asks for `edit`; then the answer."""
    return [
        {"match": {"toolResultContains": "RAN-42"}, "response": {"toolCalls": [edit]}},
        {"match": {"toolResultContains": ATTACHED_TEXT}, "response": {"toolCalls": [command]}},
        {"match": {"hasToolResult": True}, "response": {"content": "Chores done."}},
        {"match": {"userMessage": "Do the chores"}, "response": {"toolCalls": [read]}},
    ]


def call(name: str, **arguments: str) -> dict[str, Any]:
    return {"name": name, "arguments": arguments}


PATCH = f"*** Begin Patch\n*** Add File: notes.txt\n+{NOTE}\n*** End Patch\n"

AGENTS: dict[str, tuple[Callable[[str], str], list[Any], list[str]]] = {
    # The command prints the key the agent holds (Codex's shell has it): masked in the result.
    "codex": (
        lambda url: codex_targets(url) + "    sandbox: workspace-write\n",
        chores(
            call("exec_command", cmd=f"cat 'inputs/{ATTACHED}'"),
            call("exec_command", cmd="echo RAN-$((6*7)) $AIMOCK_API_KEY"),
            call("exec_command", cmd=f"apply_patch <<'EOF'\n{PATCH}EOF\n"),
        ),
        ["command_execution", "command_execution", "file_change"],
    ),
    "claude": (
        lambda url: claude_targets(url, "permission_mode: acceptEdits"),
        chores(
            call("Read", file_path=f"inputs/{ATTACHED}"),
            # Claude Code runs no command whose variables it cannot check: the key is written.
            call("Bash", command=f"echo RAN-$((6*7)) {AIMOCK_KEY}"),
            call("Write", file_path="notes.txt", content=f"{NOTE}\n"),
        ),
        ["Read", "Bash", "Write"],
    ),
    "copilot": (
        copilot_targets,
        chores(
            call("view", path=f"inputs/{ATTACHED}"),
            # Copilot keeps its provider key out of its shell: the key is written.
            call("bash", command=f"echo RAN-$((6*7)) {AIMOCK_KEY}", description="run"),
            call("create", path="notes.txt", file_text=f"{NOTE}\n"),
        ),
        ["view", "bash", "create"],
    ),
}


def evals(tools: list[str]) -> str:
    """One case attaching the module, graded on its trajectory and its workspace."""
    entries = [
        {"name": "in-order", "type": "tool_trajectory", "mode": "in_order",
         "expected": [{"tool": t} for t in tools]},
        {"name": "wrong-order", "type": "tool_trajectory", "mode": "in_order",
         "expected": [{"tool": tools[2]}, {"tool": tools[0]}]},
        {"name": "sequence", "type": "trajectory", "check": "tool-sequence",
         "value": {"mode": "exact", "steps": tools}},
        {"name": "too-few-steps", "type": "trajectory", "check": "step-count",
         "value": {"max": 2}},
        {"name": "notes-exist", "type": "file_exists", "path": "notes.txt"},
        {"name": "notes-say", "type": "file_contains", "path": "notes.txt", "value": NOTE},
        {"name": "notes-say-not", "type": "file_contains", "path": "notes.txt", "value": "nope"},
        {"name": "grep-passes", "type": "workspace_command",
         "command": f"grep -q '{NOTE}' notes.txt"},
        {"name": "test-fails", "type": "workspace_command", "command": ["test", "-f", "gone"]},
    ]  # fmt: skip
    case = {
        "id": "chores",
        "input_messages": [
            {
                "role": "user",
                "content": [
                    {"type": "text", "value": "Do the chores"},
                    {"type": "file", "value": ATTACHED},
                ],
            }
        ],
        "evaluators": entries,
    }
    return json.dumps({"evalcases": [case]}, ensure_ascii=False)


@pytest.mark.usefixtures("aimock_key")
@pytest.mark.parametrize("agent", list(AGENTS))
def test_each_agent_leaves_the_same_trajectory_and_its_workspace_changes(
    agent: str,
    project: WriteFiles,
    tmp_path: Path,
    client: redis.Redis,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("ANTHROPIC_API_KEY", AIMOCK_KEY)
    monkeypatch.setenv("CLAUDE_CONFIG_DIR", str(tmp_path / "usual-claude"))
    targets, fixtures, tools = AGENTS[agent]
    with aimock(agents_bin(), fixtures, tmp_path) as url:
        root = project(
            {"targets.yaml": targets(url), "evals.yaml": evals(tools), ATTACHED: ATTACHED_TEXT}
        )
        result = execute(planned_job(root, client, agent), "w", client)

    assert result.status is Status.OK, result.error
    assert result.answer == "Chores done."
    trajectory = result.trajectory
    assert trajectory is not None and trajectory.agent == agent
    steps = trajectory.steps
    assert [s.kind for s in steps] == ["read", "command", "edit"], steps
    assert [s.tool for s in steps] == tools
    assert all(s.ok for s in steps), steps
    read, command, edit = steps
    assert read.paths == [f"inputs/{ATTACHED}"] and ATTACHED_TEXT in (read.output or "")
    assert "RAN-42 ***" in (command.output or "")  # the key printed, masked
    assert AIMOCK_KEY not in result.model_dump_json()
    assert [Path(p).name for p in edit.paths] == ["notes.txt"]

    verdicts = {r.name: r for r in result.evaluator_results}
    passed = {name for name, r in verdicts.items() if r.score == 1.0}
    assert passed == {"in-order", "sequence", "notes-exist", "notes-say", "grep-passes"}
    assert verdicts["wrong-order"].misses == [
        f"Expected {tools[0]} at position 1, not found in remaining trace"
    ]
    assert verdicts["too-few-steps"].score == 0.0
    assert verdicts["test-fails"].misses == ["`test -f gone` exited with code 1 in the workspace"]
    assert result.passed is False

    changes = result.workspace_changes
    assert changes is not None
    assert [(f.path, f.change) for f in changes.files] == [("notes.txt", "added")]
    assert changes.diff == f"--- /dev/null\n+++ b/notes.txt\n@@ -0,0 +1 @@\n+{NOTE}\n"

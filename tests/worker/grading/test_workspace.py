"""`file_exists`, `file_contains` and `workspace_command` against workspaces written by
hand; and their configuration errors, located in the eval file."""

from __future__ import annotations

import os
import time
from pathlib import Path

import psutil
import pytest

from evalrelay.bridge.errors import EvalrelayError
from evalrelay.bridge.evalfile.cases import load_eval_file
from evalrelay.bridge.evalfile.evaluators import WorkspaceCommandEvaluator, WorkspaceFileEvaluator
from evalrelay.worker.grading.deadline import Deadline
from evalrelay.worker.grading.errors import GradingError
from evalrelay.worker.grading.run_facts import RunFacts
from evalrelay.worker.grading.workspace import workspace_command, workspace_file


def facts(folder: Path) -> RunFacts:
    return RunFacts(workspace=str(folder))


def test_file_exists_and_contains_look_into_the_workspace(tmp_path: Path) -> None:
    (tmp_path / "out").mkdir()
    (tmp_path / "out" / "notes.txt").write_text("all done\n")

    def grade(kind: str, path: str, value: str | None = None) -> tuple[float | None, list[str]]:
        spec = WorkspaceFileEvaluator(type=kind, path=path, value=value)  # type: ignore[arg-type]
        verdict = workspace_file(spec, "f", facts(tmp_path))
        return verdict.score, verdict.hits or verdict.misses

    assert grade("file_exists", "out/notes.txt") == (1.0, ["out/notes.txt exists in the workspace"])
    assert grade("file_exists", "out") == (0.0, ["out does not exist in the workspace"])
    assert grade("file_contains", "out/notes.txt", "done") == (
        1.0,
        ["out/notes.txt contains 'done'"],
    )
    assert grade("file_contains", "out/notes.txt", "nope") == (
        0.0,
        ["out/notes.txt does not contain 'nope'"],
    )
    assert grade("file_contains", "gone.txt", "x") == (
        0.0,
        ["gone.txt does not exist in the workspace"],
    )


def test_the_command_runs_in_the_workspace_without_the_workers_secrets(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-worker-secret")
    (tmp_path / "made.txt").write_text("x")
    spec = WorkspaceCommandEvaluator(
        type="workspace_command", command='test -f made.txt && echo "[${OPENAI_API_KEY:-none}]"'
    )
    verdict = workspace_command(spec, "c", facts(tmp_path))
    assert verdict.score == 1.0
    assert verdict.details["output"].strip() == "[none]"
    failing = WorkspaceCommandEvaluator(type="workspace_command", command=["test", "-f", "gone"])
    verdict = workspace_command(failing, "c", facts(tmp_path))
    assert verdict.score == 0.0
    assert verdict.misses == ["`test -f gone` exited with code 1 in the workspace"]


def test_a_command_past_its_limit_is_stopped_with_what_it_started(tmp_path: Path) -> None:
    """The command runs in the code box (a PID namespace of its own), so its child is
    found by its unique command line, not by the pid the box's shell saw."""
    seconds = f"30.{os.getpid()}{time.monotonic_ns() % 1000}"
    spec = WorkspaceCommandEvaluator(
        type="workspace_command", command=f"sleep {seconds} & touch started; wait",
        timeout_seconds=1,
    )  # fmt: skip
    began = time.monotonic()
    with pytest.raises(GradingError, match="command did not finish within 1 s"):
        workspace_command(spec, "slow", facts(tmp_path))
    assert time.monotonic() - began < 10
    assert (tmp_path / "started").is_file()
    assert not [
        p for p in psutil.process_iter(["cmdline"]) if p.info["cmdline"] == ["sleep", seconds]
    ]
    with pytest.raises(GradingError, match="grading"):
        workspace_command(spec.model_copy(update={"timeout_seconds": 30}), "slow",
                          facts(tmp_path), Deadline.after(1))  # fmt: skip


def test_without_a_workspace_the_evaluator_says_it_needs_an_agent_target() -> None:
    spec = WorkspaceFileEvaluator(type="file_exists", path="a.txt")
    with pytest.raises(GradingError, match="no workspace to look into; use it with an agent"):
        workspace_file(spec, "f", RunFacts())


BAD = """\
evalcases:
  - id: chores
    input_messages: [{role: user, content: hi}]
    evaluators:
      - {type: file_contains, path: notes.txt}
      - {type: file_exists, path: ../outside.txt}
      - {type: workspace_command, command: "  "}
"""


def test_bad_configuration_is_named_by_file_line_and_case(tmp_path: Path) -> None:
    path = tmp_path / "evals.yaml"
    path.write_text(BAD)
    with pytest.raises(EvalrelayError) as raised:
        load_eval_file(path)
    said = str(raised.value)
    assert said.splitlines() == [
        f"{path}:5:9: case 'chores': evalcases[0].evaluators[0]: "
        "file_contains needs `value`: the text the file must hold",
        f"{path}:6:35: case 'chores': evalcases[0].evaluators[1].path: path '../outside.txt' "
        "must be relative to the agent's workspace and stay inside it",
        f"{path}:7:44: case 'chores': evalcases[0].evaluators[2].command: "
        "command is empty; give the command to run in the workspace",
    ]


TRAJECTORY_BAD = """\
evalcases:
  - id: steps
    input_messages: [{role: user, content: hi}]
    evaluators:
      - {type: trajectory, check: step-count, value: {name: Read}}
      - {type: trajectory, check: tool-used, value: []}
      - {type: trajectory, check: tool-sequence, value: {steps: [Read, {args: {}}]}}
      - {type: trajectory, check: tool-args-match, value: {name: Read, mode: fuzzy, args: {}}}
      - {type: trajectory, check: tool-args-match, value: {name: Read}}
      - {type: trajectory, check: tool-used, value: {name: Read, min: 1}}
"""


def test_trajectory_values_agentv_refuses_are_located_errors(tmp_path: Path) -> None:
    path = tmp_path / "evals.yaml"
    path.write_text(TRAJECTORY_BAD)
    with pytest.raises(EvalrelayError) as raised:
        load_eval_file(path)
    said = [line.split(": ", 3)[3] for line in str(raised.value).splitlines()]
    assert said == [
        "trajectory:step-count assertion must include a min or max property",
        "trajectory:tool-used assertion requires at least one expected tool",
        "trajectory:tool-sequence assertion step 2 must include a name or pattern property",
        'trajectory:tool-args-match assertion mode must be "partial" or "exact"',
        "trajectory:tool-args-match assertion must include an args or arguments property",
    ]
    assert str(raised.value).splitlines()[0].startswith(f"{path}:5:9: case 'steps': ")


def test_a_link_out_of_the_workspace_is_not_followed(tmp_path: Path) -> None:
    """An agent links its files to a host file: neither `file_contains` nor `file_exists`
    may then tell what the host file holds, or that it is there."""
    host = tmp_path / "host"
    host.mkdir()
    (host / "id_ed25519").write_text("PRIVATE KEY 0123\n")
    workspace = tmp_path / "workspace"
    workspace.mkdir()
    (workspace / "notes.txt").symlink_to(host / "id_ed25519")
    (workspace / "peek").symlink_to(host)
    os.link(host / "id_ed25519", workspace / "hard.txt")

    for path in ("notes.txt", "peek/id_ed25519", "hard.txt"):
        for kind in ("file_contains", "file_exists"):
            spec = WorkspaceFileEvaluator(type=kind, path=path, value="PRIVATE KEY")  # type: ignore[arg-type]
            verdict = workspace_file(spec, "f", facts(workspace))
            assert verdict.score == 0.0, (path, kind)
            (miss,) = verdict.misses
            assert miss.startswith(f"{path} was not read: "), miss
            assert "link" in miss


def test_the_command_of_a_sandboxed_agent_runs_in_its_sandbox(tmp_path: Path) -> None:
    """What a sandboxed agent left may be code: the command that runs it sees the
    workspace and nothing else of the worker's, as the agent did (bubblewrap here)."""
    host = tmp_path / "host-only.txt"
    host.write_text("worker's file\n")
    workspace = tmp_path / "workspace"
    workspace.mkdir()
    (workspace / "made.txt").write_text("x")
    sandbox = {"runtime": "sandbox", "isolation": {"engine": "bubblewrap"}}

    def score(command: str, target: dict[str, object] | None) -> float | None:
        spec = WorkspaceCommandEvaluator(type="workspace_command", command=command)
        return workspace_command(spec, "c", facts(workspace), None, target).score

    assert score("test -f made.txt", sandbox) == 1.0
    assert score(f"cat {host}", sandbox) == 0.0
    assert score(f"cat {host}", None) == 0.0  # a host agent's: the code box holds it too
    (workspace / "host-only.txt").write_text("the workspace's own\n")
    assert score("cat host-only.txt && touch written", None) == 1.0
    assert (workspace / "written").is_file()  # the box writes the workspace

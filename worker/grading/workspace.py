"""`file_exists`, `file_contains` and `workspace_command`: what an agent left in its
workspace. The command runs like a script evaluator (its own process group, stopped with
everything it started at its time limit, bounded by the grading deadline), in the
workspace, with none of the worker's secrets in its environment: it may run code the
agent wrote."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from bridge.evalfile.evaluators import WorkspaceCommandEvaluator, WorkspaceFileEvaluator
from bridge.results.result import EvaluatorResult
from worker.agents.environment import agent_environment
from worker.agents.inside import NotInside, read_inside
from worker.grading.deadline import Deadline
from worker.grading.errors import GradingError
from worker.grading.run_facts import RunFacts
from worker.grading.script import run_bounded
from worker.providers.failures import tail

FILE_BYTES = 16_000_000
"""The most of a file `file_contains` reads."""

OUTPUT_CHARS = 2_000
"""The command's output kept in the evaluator's details (its tail)."""


def workspace_file(spec: WorkspaceFileEvaluator, name: str, run: RunFacts) -> EvaluatorResult:
    """The file as the agent left it, reached without following a link: a link the agent
    planted would make a host file's content (or existence) the verdict."""
    folder = _workspace(name, run)
    relative = spec.path.replace("\\", "/")
    try:
        text = read_inside(folder, relative, FILE_BYTES).text
    except FileNotFoundError:
        passed, what = False, f"{spec.path} does not exist in the workspace"
    except (NotInside, OSError) as exc:
        passed, what = False, f"{spec.path} was not read: {exc}"
    else:
        held = spec.value or ""
        passed = spec.type == "file_exists" or held in text
        what = (
            f"{spec.path} exists in the workspace"
            if spec.type == "file_exists"
            else f"{spec.path} {'contains' if passed else 'does not contain'} {held!r}"
        )
    return _verdict(spec.type, name, spec.weight, passed, what, {"path": spec.path})


def workspace_command(
    spec: WorkspaceCommandEvaluator, name: str, run: RunFacts, deadline: Deadline | None = None
) -> EvaluatorResult:
    folder = _workspace(name, run)
    argv = ["sh", "-c", spec.command] if isinstance(spec.command, str) else list(spec.command)
    done = run_bounded(
        argv, folder, spec.timeout_seconds, name, "command", deadline, env=agent_environment()
    )
    passed = done.returncode == 0
    shown = " ".join(argv) if isinstance(spec.command, list) else spec.command
    what = f"`{shown}` exited with code {done.returncode} in the workspace"
    details = {
        "command": argv,
        "exit_code": done.returncode,
        "duration_ms": done.duration_ms,
        "output": tail(done.stdout + done.stderr, OUTPUT_CHARS),
    }
    return _verdict(spec.type, name, spec.weight, passed, what, details)


def _workspace(name: str, run: RunFacts) -> Path:
    if not run.workspace:
        raise GradingError(
            f"evaluator {name}: the target has no workspace to look into; "
            "use it with an agent target (codex, claude-code, copilot-cli, cli)"
        )
    return Path(run.workspace)


def _verdict(
    kind: str, name: str, weight: float, passed: bool, what: str, details: dict[str, Any]
) -> EvaluatorResult:
    return EvaluatorResult(
        name=name,
        type=kind,
        score=1.0 if passed else 0.0,
        weight=weight,
        hits=[what] if passed else [],
        misses=[] if passed else [what],
        details=details,
    )

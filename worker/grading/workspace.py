"""`file_exists`, `file_contains` and `workspace_command`: what an agent left in its
workspace. The command runs like a script evaluator (its own process group, stopped with
everything it started at its time limit, bounded by the grading deadline), in the
workspace, with none of the worker's secrets in its environment: it may run code the
agent wrote."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from pydantic import ValidationError

from evalrelay.bridge.evalfile.evaluators import WorkspaceCommandEvaluator, WorkspaceFileEvaluator
from evalrelay.bridge.results.result import EvaluatorResult
from evalrelay.bridge.targets.settings import Isolation
from evalrelay.worker.agents.environment import agent_environment
from evalrelay.worker.agents.inside import NotInside, read_inside
from evalrelay.worker.agents.sandbox import SandboxUnavailable, sandboxed
from evalrelay.worker.grading.deadline import Deadline
from evalrelay.worker.grading.errors import GradingError
from evalrelay.worker.grading.run_facts import RunFacts
from evalrelay.worker.grading.script import run_bounded
from evalrelay.worker.providers.failures import tail

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
    spec: WorkspaceCommandEvaluator,
    name: str,
    run: RunFacts,
    deadline: Deadline | None = None,
    target: dict[str, Any] | None = None,
) -> EvaluatorResult:
    """The command in the workspace; for an agent that ran in the sandbox (`target`, its
    settings, say `runtime: sandbox`), in the same sandbox: the workspace holds what the
    agent wrote, which may be code, and the command may run it."""
    folder = _workspace(name, run)
    argv = ["sh", "-c", spec.command] if isinstance(spec.command, str) else list(spec.command)
    isolation = _isolation(target or {}, name)
    if isolation is None:
        done = run_bounded(
            argv, folder, spec.timeout_seconds, name, "command", deadline, writable=[folder]
        )
    else:
        try:
            with sandboxed(
                argv,
                cwd=folder,
                env=agent_environment(),
                writable=[folder],
                readable=[],
                isolation=isolation,
            ) as confined:
                done = run_bounded(
                    confined.argv,
                    folder,
                    spec.timeout_seconds,
                    name,
                    "command",
                    deadline,
                    env=confined.env,
                    box=False,
                )
        except SandboxUnavailable as exc:
            raise GradingError(f"evaluator {name}: {exc}") from None
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


def _isolation(target: dict[str, Any], name: str) -> Isolation | None:
    """The sandbox the target's agent ran in, or None for one that ran on the host."""
    if target.get("runtime") != "sandbox":
        return None
    try:
        return Isolation.model_validate(target.get("isolation") or {})
    except ValidationError as exc:
        raise GradingError(f"evaluator {name}: the target's isolation: {exc}") from None


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

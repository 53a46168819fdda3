"""Answer transforms: commands that rewrite the answer before an evaluator grades it
(promptfoo's `transform`), each run as grading scripts are (its own process group, no
shell, stopped at its time limit or the grading deadline, whichever comes first)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from bridge.contract.job import Job
from bridge.evalfile.evaluators import AnswerTransform
from worker.agents.runner import run_command
from worker.grading.deadline import Deadline
from worker.grading.errors import GradingError
from worker.providers.failures import tail


def transformed(
    steps: list[AnswerTransform], name: str, job: Job, answer: str, deadline: Deadline
) -> str:
    """The answer after each step in turn; a value that is not a string is its JSON text,
    written as JavaScript's JSON.stringify writes it."""
    value: Any = answer
    for i, step in enumerate(steps, 1):
        value = _run(step, name, f"{i} of {len(steps)}", job, value, deadline)
    if isinstance(value, str):
        return value
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))


def _run(
    step: AnswerTransform, name: str, which: str, job: Job, value: Any, deadline: Deadline
) -> Any:
    what = f"evaluator {name}: transform {which}"
    seconds = deadline.within(step.timeout_seconds, name)
    payload = {"output": value, "prompt": job.request.question, "config": step.config}
    cwd = Path(step.cwd or ".")
    try:
        run = run_command(step.command, cwd=cwd, seconds=seconds, stdin_text=json.dumps(payload))
    except OSError as exc:
        raise GradingError(f"{what}: cannot run {step.command[0]!r} in {cwd}: {exc}") from None
    if run.timed_out:
        raise GradingError(f"{what} did not finish within {seconds:.0f} s")
    if run.returncode != 0:
        raise GradingError(f"{what} exited with code {run.returncode}: {tail(run.stderr, 800)}")
    try:
        reply = json.loads(run.stdout)
    except json.JSONDecodeError:
        raise GradingError(f"{what} printed no JSON: {tail(run.stdout, 300)}") from None
    if not isinstance(reply, dict) or ("output" not in reply and "error" not in reply):
        raise GradingError(f"{what} printed neither `output` nor `error`")
    if "error" in reply:
        raise GradingError(f"{what}: {reply['error']}")
    return reply["output"]

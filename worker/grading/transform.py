"""Answer transforms: commands that rewrite the answer before an evaluator grades it
(promptfoo's `transform`), each run as grading scripts are (its own process group, no
shell, stopped at its time limit or the grading deadline, whichever comes first)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from evalrelay.bridge.contract.job import Job
from evalrelay.bridge.evalfile.evaluators import AnswerTransform
from evalrelay.worker.grading.deadline import Deadline
from evalrelay.worker.grading.errors import GradingError
from evalrelay.worker.grading.script import run_bounded
from evalrelay.worker.providers.failures import tail


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
    payload = {"output": value, "prompt": job.request.question, "config": step.config}
    cwd = Path(step.cwd or ".")
    run = run_bounded(
        step.command, cwd, step.timeout_seconds, name, f"transform {which}", deadline,
        json.dumps(payload),
    )  # fmt: skip
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

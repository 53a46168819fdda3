"""`code` evaluators: a script gets the case and the answer as JSON on standard input and
prints a JSON verdict `{score, hits, misses, reasoning}`. It runs without a shell, in the
folder the job names, and is stopped at its time limit with everything it started."""

from __future__ import annotations

import json
import shlex
import subprocess
import time
from pathlib import Path

from bridge.evaluators import CodeEvaluator
from bridge.jobs import Job
from bridge.results import EvaluatorResult
from worker.agents.commands import tail
from worker.agents.runner import stop_tree
from worker.grading.errors import GradingError
from worker.grading.verdict import parse_verdict


def run_script(spec: CodeEvaluator, name: str, job: Job, answer: str) -> EvaluatorResult:
    argv = shlex.split(spec.script) if isinstance(spec.script, str) else list(spec.script)
    cwd = Path(spec.cwd or ".")
    payload = json.dumps(
        {
            "case_id": job.case_id,
            "target": job.target.name,
            "question": job.request.question,
            "expected_outcome": job.outcome,
            "reference_answer": job.reference_answer,
            "candidate_answer": answer,
            "input_files": [f.display_path for f in job.files],
            "guideline_paths": [f.display_path for f in job.files if f.is_guideline],
        }
    )
    started = time.monotonic()
    try:
        process = subprocess.Popen(
            argv,
            cwd=cwd,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            start_new_session=True,
        )
    except OSError as exc:
        raise GradingError(f"evaluator {name}: cannot run {argv[0]!r} in {cwd}: {exc}") from None
    try:
        out, err = process.communicate(payload.encode(), timeout=spec.timeout_seconds)
    except subprocess.TimeoutExpired:
        stop_tree(process)
        raise GradingError(
            f"evaluator {name}: script did not finish within {spec.timeout_seconds:.0f} s"
        ) from None
    stderr = tail(err.decode(errors="replace"), 800)
    if process.returncode != 0:
        raise GradingError(
            f"evaluator {name}: script exited with code {process.returncode}: {stderr}"
        )
    try:
        verdict = parse_verdict(out.decode(errors="replace"))
    except ValueError as exc:
        raise GradingError(f"evaluator {name}: script printed no valid verdict: {exc}") from None
    return EvaluatorResult(
        name=name,
        type=spec.type,
        score=verdict.score,
        weight=spec.weight,
        hits=verdict.hits,
        misses=verdict.misses,
        reasoning=verdict.reasoning,
        details={
            "command": argv,
            "duration_ms": int((time.monotonic() - started) * 1000),
            **({"stderr": stderr} if stderr else {}),
        },
    )

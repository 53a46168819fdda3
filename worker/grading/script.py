"""`code` evaluators: a script gets the case and the answer as JSON on standard input and
prints a JSON verdict `{score, hits, misses, reasoning}`. It runs without a shell, in the
folder the job names, and is stopped at its time limit with everything it started, by
the same runner as the command-line agents."""

from __future__ import annotations

import json
import os
import shlex
import tempfile
import time
from pathlib import Path

from bridge.evalfile.evaluators import CodeEvaluator
from bridge.queue.jobs import Job
from bridge.results.result import EvaluatorResult
from worker.agents.runner import run_agent
from worker.grading.errors import GradingError
from worker.grading.verdict import parse_verdict
from worker.providers.failures import tail


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
    with tempfile.TemporaryDirectory(prefix="evalrelay-grader-") as scratch:
        try:
            run = run_agent(
                argv,
                cwd=cwd,
                env=dict(os.environ),
                stdin_text=payload,
                deadline=time.monotonic() + spec.timeout_seconds,
                stdout_file=Path(scratch) / "verdict.json",
            )
        except OSError as exc:
            raise GradingError(
                f"evaluator {name}: cannot run {argv[0]!r} in {cwd}: {exc}"
            ) from None
    if run.timed_out:
        raise GradingError(
            f"evaluator {name}: script did not finish within {spec.timeout_seconds:.0f} s"
        )
    stderr = tail(run.stderr, 800)
    if run.returncode != 0:
        raise GradingError(f"evaluator {name}: script exited with code {run.returncode}: {stderr}")
    try:
        verdict = parse_verdict(run.stdout)
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
            "duration_ms": run.duration_ms,
            **({"stderr": stderr} if stderr else {}),
        },
    )

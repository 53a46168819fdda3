"""`code` evaluators: a script gets the case and the answer as JSON on standard input and
prints a JSON verdict `{score, hits, misses, reasoning}`. It runs without a shell, in the
folder the job names, and is stopped at its time limit with everything it started, by
the same runner as the command-line agents."""

from __future__ import annotations

import json
import shlex
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from evalrelay.bridge.code_box import BoxUnavailable, boxed
from evalrelay.bridge.contract.job import Job
from evalrelay.bridge.evalfile.evaluators import CodeEvaluator
from evalrelay.bridge.results.result import EvaluatorResult
from evalrelay.worker.agents.environment import agent_environment
from evalrelay.worker.agents.runner import AgentRun, run_command
from evalrelay.worker.grading.deadline import Deadline
from evalrelay.worker.grading.errors import GradingError
from evalrelay.worker.grading.run_facts import RunFacts
from evalrelay.worker.grading.verdict import ScriptReply, Verdict, parse_json_reply, parse_verdict
from evalrelay.worker.providers.failures import tail


def run_bounded(
    argv: list[str],
    cwd: Path,
    limit: float,
    name: str,
    what: str,
    deadline: Deadline | None = None,
    stdin_text: str | None = None,
    env: dict[str, str] | None = None,
    writable: Sequence[Path] = (),
    box: bool = True,
) -> AgentRun:
    """An evaluator's command (a script, a transform, an aggregator, a workspace command),
    run to its end within its own limit and the grading deadline, in the code box
    (`bridge.code_box`: its project read-only, `writable` read-write, no network, no key)
    unless `box` is False because it already runs in an agent's sandbox. A command that
    cannot start or does not end is a grading error saying which."""
    seconds = deadline.within(limit, name) if deadline else limit
    env = agent_environment() if env is None else env
    try:
        if box:
            argv, env = boxed(argv, cwd=cwd, env=env, writable=writable)
        run = run_command(argv, cwd=cwd, seconds=seconds, stdin_text=stdin_text, env=env)
    except BoxUnavailable as exc:
        raise GradingError(f"evaluator {name}: {exc}") from None
    except OSError as exc:
        raise GradingError(f"evaluator {name}: cannot run {argv[0]!r} in {cwd}: {exc}") from None
    if run.timed_out:
        if deadline and seconds < limit:
            raise GradingError(f"{deadline.overrun(name)}, while its {what} ran")
        raise GradingError(f"evaluator {name}: {what} did not finish within {limit:.0f} s")
    return run


def run_script(
    spec: CodeEvaluator,
    name: str,
    job: Job,
    answer: str,
    run_facts: RunFacts | None = None,
    deadline: Deadline | None = None,
) -> EvaluatorResult:
    argv = command_of(spec)
    facts = run_facts or RunFacts()
    payload = json.dumps(script_input(spec, job, answer, facts), ensure_ascii=False)
    run = run_bounded(
        argv, Path(spec.cwd or "."), spec.timeout_seconds, name, "script", deadline, payload
    )
    stderr = tail(run.stderr, 800)
    if run.returncode != 0:
        raise GradingError(f"evaluator {name}: script exited with code {run.returncode}: {stderr}")
    try:
        verdict = parse_verdict(run.stdout) if spec.type != "script" else script_verdict(run.stdout)
    except ValueError as exc:
        raise GradingError(f"evaluator {name}: script printed no valid verdict: {exc}") from None
    return EvaluatorResult(
        name=name,
        type=spec.type,
        score=verdict.score,
        weight=spec.weight,
        passed=verdict.passed,
        hits=verdict.hits,
        misses=verdict.misses,
        reasoning=verdict.reasoning,
        details={
            "command": argv,
            "duration_ms": run.duration_ms,
            **({"stderr": stderr} if stderr else {}),
        },
    )


def script_verdict(stdout: str) -> Verdict:
    """AgentV's July 2026 reply: `score`, else the mean of `checks`, else `pass` as 1 or 0;
    `checks` become hits and misses, `reason` the reasoning."""
    reply = parse_json_reply(stdout, ScriptReply)
    checks = reply.checks
    score = reply.score
    if score is None and checks:
        score = sum(c.score if c.score is not None else float(c.passed) for c in checks) / len(
            checks
        )
    if score is None:
        if reply.passed is None:
            raise ValueError("the reply has none of score, checks or pass")
        score = float(reply.passed)
    return Verdict(
        score=min(max(score, 0.0), 1.0),
        passed=reply.passed,
        hits=reply.hits + [c.text for c in checks if c.passed],
        misses=reply.misses + [c.text for c in checks if not c.passed],
        reasoning=reply.reason or reply.reasoning,
    )


def command_of(spec: CodeEvaluator) -> list[str]:
    if isinstance(spec.script, list):
        return list(spec.script)
    return ["sh", "-lc", spec.script] if spec.type != "code" else shlex.split(spec.script)


def script_input(
    spec: CodeEvaluator, job: Job, answer: str, facts: RunFacts | None = None
) -> dict[str, Any]:
    """What the script reads on standard input: the case and the answer. `code_judge`
    scripts get the fields AgentV's give them too."""
    payload: dict[str, Any] = {
        "case_id": job.case_id,
        "target": job.target.name,
        "question": job.request.question,
        "expected_outcome": job.outcome,
        "reference_answer": job.reference_answer,
        "candidate_answer": answer,
        "input_files": [f.display_path for f in job.files],
        "guideline_paths": [f.display_path for f in job.files if f.is_guideline],
    }
    if spec.type == "code":
        return payload
    reference = job.reference_answer
    facts = facts or RunFacts()
    calls = [{"tool": c.get("name"), "input": c.get("arguments")} for c in facts.tool_calls]
    return payload | {
        "input_files": [f.display_path for f in job.files if not f.is_guideline],
        "guideline_files": payload["guideline_paths"],
        "expected_messages": [{"role": "assistant", "content": reference}] if reference else [],
        "output_messages": [
            {"role": "assistant", "content": answer, **({"tool_calls": calls} if calls else {})}
        ],
        "trace_summary": trace_summary(facts),
        "config": spec.config,
        # AgentV's July 2026 names, for `script` graders.
        "output": answer,
        "criteria": job.outcome,
        "expected_output": [{"role": "assistant", "content": reference}] if reference else [],
        "input": [{"role": "user", "content": job.request.question}],
        "metadata": job.metadata,
        "token_usage": {"input": facts.usage.input_tokens, "output": facts.usage.output_tokens}
        if facts.usage
        else None,
        "cost_usd": facts.cost_usd,
        "duration_ms": facts.duration_ms,
    }


def trace_summary(facts: RunFacts) -> dict[str, Any]:
    """AgentV's summary of the run, with the figures the provider reported."""
    names = [str(c.get("name")) for c in facts.tool_calls]
    usage = facts.usage
    return {
        "event_count": len(names),
        "tool_names": sorted(set(names)),
        "tool_calls_by_name": {n: names.count(n) for n in sorted(set(names))},
        "error_count": 0,
        "token_usage": {"input": usage.input_tokens, "output": usage.output_tokens}
        if usage
        else None,
        "cost_usd": facts.cost_usd,
        "duration_ms": facts.duration_ms,
    }

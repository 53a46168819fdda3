"""`llm_judge`: another target grades the answer against the outcome, the question and the
reference answer, replying with a JSON verdict.

The reply is checked (a number from 0 to 1, lists of strings). A malformed or out-of-range
reply is asked for again, with what was wrong; after the last try the grading fails, so a
bad judge never turns into a silent zero.
"""

from __future__ import annotations

import time
from string import Template
from typing import Any

import redis

from bridge.evalfile.evaluators import LlmJudgeEvaluator
from bridge.prompt.build import PromptRequest
from bridge.queue.jobs import Job
from bridge.results.result import EvaluatorResult
from worker.grading.errors import GradingError
from worker.grading.verdict import parse_verdict
from worker.providers.base import ProviderFailure
from worker.providers.call import call_provider

JUDGE_TRIES = 3
JUDGE_TIMEOUT_SECONDS = 300.0

SYSTEM_PROMPT = """\
You are an expert evaluator. Grade the candidate answer by how well it achieves the \
expected outcome for the original task. When a reference answer is given, treat it as \
the gold standard for content, but do not require the same wording. Be concise.

Reply with one JSON object and nothing else:
{"score": <a number from 0.0 to 1.0>, "hits": [<up to 4 short strings: what the answer \
got right>], "misses": [<up to 4 short strings: what it missed or got wrong>], \
"reasoning": "<one or two sentences>"}"""


def judge(
    spec: LlmJudgeEvaluator, name: str, job: Job, answer: str, client: redis.Redis | None
) -> EvaluatorResult:
    judge_name = spec.target or job.default_judge
    if judge_name is None or judge_name not in job.judges:
        raise GradingError(
            f"evaluator {name}: no judge target; set `target:` on the evaluator or "
            f"`judge_target:` on target '{job.target.name}'"
        )
    system, user = prompts(spec, job, answer)
    problems: list[str] = []
    replies: list[str] = []
    for _ in range(JUDGE_TRIES):
        retry_note = (
            f"\n\nYour previous reply could not be used ({problems[-1]}). Reply with only the "
            f"JSON object described above."
            if problems
            else ""
        )
        request = PromptRequest(question=user + retry_note, system_prompt=system)
        judge_job = job.model_copy(
            update={"target": job.judges[judge_name], "request": request, "files": []}
        )
        try:
            output = call_provider(judge_job, time.monotonic() + JUDGE_TIMEOUT_SECONDS, client)
        except ProviderFailure as failure:
            raise GradingError(
                f"evaluator {name}: judge target '{judge_name}' failed "
                f"({failure.status.value}): {failure.message}",
                _details(judge_name, None, replies, problems),
            ) from None
        replies.append(output.answer)
        try:
            verdict = parse_verdict(output.answer)
        except ValueError as exc:
            problems.append(str(exc))
            continue
        return EvaluatorResult(
            name=name,
            type=spec.type,
            score=verdict.score,
            weight=spec.weight,
            hits=verdict.hits[:4],
            misses=verdict.misses[:4],
            reasoning=verdict.reasoning,
            details=_details(judge_name, output.model, replies, problems),
        )
    raise GradingError(
        f"evaluator {name}: judge target '{judge_name}' gave no valid verdict in "
        f"{JUDGE_TRIES} tries; last problem: {problems[-1]}",
        _details(judge_name, None, replies, problems),
    )


def prompts(spec: LlmJudgeEvaluator, job: Job, answer: str) -> tuple[str, str]:
    """(system, user). A custom prompt with `${...}` placeholders replaces the user prompt;
    one without replaces the system prompt (AgentV's rule)."""
    values = {
        "expected_outcome": job.outcome or "",
        "question": job.request.question,
        "reference_answer": job.reference_answer or "",
        "candidate_answer": answer,
    }
    sections = [
        (
            "expected_outcome",
            values["expected_outcome"]
            or "(none given: judge the answer on its own merits for the task)",
        ),
        ("question", values["question"]),
        *([("reference_answer", values["reference_answer"])] if job.reference_answer else []),
        ("candidate_answer", answer),
    ]
    user = "\n\n".join(f"[[ ## {title} ## ]]\n{body}" for title, body in sections)
    if spec.prompt is None:
        return SYSTEM_PROMPT, user
    if "${" in spec.prompt:
        return SYSTEM_PROMPT, Template(spec.prompt).safe_substitute(values)
    return spec.prompt, user


def _details(
    judge_name: str, model: str | None, replies: list[str], problems: list[str]
) -> dict[str, Any]:
    details: dict[str, Any] = {"judge": judge_name, "tries": len(replies)}
    if model:
        details["model"] = model
    if problems:
        details["rejected_replies"] = [
            {"reply": reply[:500], "problem": problem}
            for reply, problem in zip(replies, problems, strict=False)
        ]
    return details

"""`llm_judge`: another target grades the answer against the outcome, the question and the
reference answer, replying with a JSON verdict.

The reply is checked (a number from 0 to 1, lists of strings). A malformed or out-of-range
reply is asked for again, with what was wrong; after the last try the grading fails, so a
bad judge never turns into a silent zero.
"""

from __future__ import annotations

import json
import re
import time
from collections.abc import Callable
from string import Template
from typing import Any, TypeVar

import redis
from pydantic import BaseModel

from evalrelay.bridge.contract.job import Job, TargetRef
from evalrelay.bridge.evalfile.evaluators import LlmJudgeEvaluator, RubricEvaluator, RubricItem
from evalrelay.bridge.prompt.request import PromptRequest
from evalrelay.bridge.results.pricing import PRICE_PROVIDERS, cost_of
from evalrelay.bridge.results.result import Cost, EvaluatorResult, Usage
from evalrelay.worker.grading.deadline import Deadline
from evalrelay.worker.grading.errors import GradingError, refuse_unknown_judge
from evalrelay.worker.grading.verdict import Verdict, parse_rubric_verdict, parse_verdict
from evalrelay.worker.providers.base import ProviderFailure, ProviderOutput
from evalrelay.worker.providers.call import call_provider

JUDGE_TRIES = 3
JUDGE_TIMEOUT_SECONDS = 300.0

REPLY_FORMAT = """\
Reply with one JSON object and nothing else:
{"score": <a number from 0.0 to 1.0>, "hits": [<up to 4 short strings: what the answer \
got right>], "misses": [<up to 4 short strings: what it missed or got wrong>], \
"reasoning": "<one or two sentences>"}"""

PASS_REPLY_FORMAT = """\
Reply with one JSON object and nothing else:
{"pass": <true when the answer achieves the expected outcome, else false>, "score": <a \
number from 0.0 to 1.0>, "reason": "<one or two sentences>"}"""
"""The reply asked for under promptfoo grading: promptfoo's graders answer with a pass of
their own, which decides the assertion (the score decides it only against a threshold)."""

INSTRUCTIONS = """\
You are an expert evaluator. Grade the candidate answer by how well it achieves the \
expected outcome for the original task. When a reference answer is given, treat it as \
the gold standard for content, but do not require the same wording. Be concise."""

SYSTEM_PROMPT = f"{INSTRUCTIONS}\n\n{REPLY_FORMAT}"

PLACEHOLDER = re.compile(r"\{\{\s*([A-Za-z0-9_]+)\s*\}\}")
"""AgentV's `{{ name }}`; a name it does not know stays as written."""


RUBRIC_SYSTEM_PROMPT = """\
You are an expert evaluator. Check the candidate answer against each rubric item: is it \
satisfied or not? Be concise.

Reply with one JSON object and nothing else:
{"checks": [{"id": "<rubric id>", "satisfied": <true|false>, "reasoning": "<brief>"}, ...], \
"overall_reasoning": "<one or two sentences>"}"""

V = TypeVar("V")


def judge(
    spec: LlmJudgeEvaluator | RubricEvaluator,
    name: str,
    job: Job,
    answer: str,
    client: redis.Redis | None,
    deadline: Deadline | None = None,
) -> EvaluatorResult:
    if spec.rubrics:
        return _rubric_judge(spec, spec.rubrics, name, job, answer, client, deadline)
    assert isinstance(spec, LlmJudgeEvaluator)
    system, user = prompts(spec, job, answer)
    verdict, details, spent = ask(spec, name, job, system, user, parse_verdict, client, deadline)
    return EvaluatorResult(
        name=name,
        type=spec.type,
        score=verdict.score,
        weight=spec.weight,
        passed=judged_pass(verdict, spec) if job.grading == "promptfoo" else verdict.passed,
        hits=verdict.hits[:4],
        misses=verdict.misses[:4],
        reasoning=verdict.reasoning,
        details=details,
        usage=spent.usage,
        cost=spent.cost,
    )


def _rubric_judge(
    spec: LlmJudgeEvaluator | RubricEvaluator,
    rubrics: list[RubricItem],
    name: str,
    job: Job,
    answer: str,
    client: redis.Redis | None,
    deadline: Deadline | None,
) -> EvaluatorResult:
    """Each criterion satisfied or not; the score is the satisfied share of the weight, and
    a required criterion not satisfied fails the evaluator whatever the score."""
    verdict, details, spent = ask(
        spec, name, job, RUBRIC_SYSTEM_PROMPT, rubric_prompt(rubrics, job, answer),
        parse_rubric_verdict, client, deadline,
    )  # fmt: skip
    by_id = {str(item.id): item for item in rubrics}
    checks = {c.id: c for c in verdict.checks if c.id in by_id}
    earned = total = 0.0
    hits, misses, unmet = [], [], []
    for item in rubrics:
        check = checks.get(str(item.id))
        total += item.weight
        why = f": {check.reasoning}" if check and check.reasoning else " (not checked by the judge)"
        line = f"[{item.id}] {item.text()}{why}"
        if check and check.satisfied:
            earned += item.weight
            hits.append(line)
        else:
            misses.append(line)
            if item.required:
                unmet.append(str(item.id))
    score = round(earned / total, 6) if total else 0.0
    return EvaluatorResult(
        name=name,
        type=spec.type,
        score=score,
        weight=spec.weight,
        hits=hits,
        misses=misses,
        reasoning=verdict.overall_reasoning,
        details={**details, **({"required_unmet": unmet} if unmet else {})},
        usage=spent.usage,
        cost=spent.cost,
    )


def rubric_prompt(rubrics: list[RubricItem], job: Job, answer: str) -> str:
    def line(item: RubricItem) -> str:
        marks = "".join(
            [
                " (REQUIRED)" if item.required else "",
                f" (weight: {item.weight:g})" if item.weight != 1.0 else "",
                f" (check: {item.operator})" if item.operator else "",
            ]
        )
        return f"- [{item.id}]{marks}: {item.text()}"

    sections = [
        ("question", job.request.question),
        *([("expected_outcome", job.outcome)] if job.outcome else []),
        *([("reference_answer", job.reference_answer)] if job.reference_answer else []),
        ("candidate_answer", answer),
        ("rubrics", "\n".join(line(item) for item in rubrics)),
    ]
    ask_for = "For each rubric, decide whether it is satisfied and say briefly why."
    return f"{sectioned(sections)}\n\n{ask_for}"


def ask(
    spec: LlmJudgeEvaluator | RubricEvaluator,
    name: str,
    job: Job,
    system: str,
    user: str,
    parse: Callable[[str], V],
    client: redis.Redis | None,
    deadline: Deadline | None = None,
) -> tuple[V, dict[str, Any], Spent]:
    """The judge's parsed reply, asked again with what was wrong until it parses; each ask
    ends by the grading deadline. What every try used and cost is summed in `Spent`."""
    refuse_unknown_judge(job.unknown_judges, spec.target, name)
    judge_name = spec.target or job.default_judge
    if judge_name is None or judge_name not in job.judges:
        raise GradingError(
            f"evaluator {name}: no judge target; set `target:` on the evaluator or "
            f"`judge_target:` on target '{job.target.name}'"
        )
    problems: list[str] = []
    replies: list[str] = []
    spent = Spent()
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
            seconds = (
                deadline.within(JUDGE_TIMEOUT_SECONDS, name) if deadline else JUDGE_TIMEOUT_SECONDS
            )
            output = call_provider(judge_job, time.monotonic() + seconds, client)
        except ProviderFailure as failure:
            raise GradingError(
                f"evaluator {name}: judge target '{judge_name}' failed "
                f"({failure.status.value}): {failure.message}",
                _details(judge_name, None, replies, problems),
            ) from None
        replies.append(output.answer)
        spent.add(output, judge_job.target)
        try:
            verdict = parse(output.answer)
            return verdict, _details(judge_name, output.model, replies, problems), spent
        except ValueError as exc:
            problems.append(str(exc))
    raise GradingError(
        f"evaluator {name}: judge target '{judge_name}' gave no valid verdict in "
        f"{JUDGE_TRIES} tries; last problem: {problems[-1]}",
        _details(judge_name, None, replies, problems),
    )


class Spent(BaseModel):
    """A judge's tokens and dollars over its tries; `cost` None once a try is unpriced."""

    usage: Usage | None = None
    cost: Cost | None = None
    unpriced: bool = False

    def add(self, output: ProviderOutput, target: TargetRef) -> None:
        models = (output.model, target.settings.get("model"))
        cost = cost_of(output.usage, models, output.cost_usd, PRICE_PROVIDERS.get(target.kind))
        self._count(output.usage, cost)

    def add_judged(self, result: EvaluatorResult) -> None:
        """What an evaluator's own judges spent (a composite's member); nothing when it
        called none."""
        if result.usage is not None or result.cost is not None:
            self._count(result.usage, result.cost)

    def add_spent(self, other: Spent) -> None:
        """What another judge spent over its tries (a composite's `llm_judge` aggregator)."""
        if other.usage is not None or other.cost is not None or other.unpriced:
            self._count(other.usage, None if other.unpriced else other.cost)

    def _count(self, usage: Usage | None, cost: Cost | None) -> None:
        if usage is not None:
            before = self.usage or Usage()
            self.usage = Usage(
                input_tokens=(before.input_tokens or 0) + (usage.input_tokens or 0),
                output_tokens=(before.output_tokens or 0) + (usage.output_tokens or 0),
            )
        if cost is None or self.unpriced:
            self.unpriced, self.cost = True, None
        else:
            usd = (self.cost.usd if self.cost else 0.0) + cost.usd
            same = self.cost is None or self.cost.source == cost.source
            self.cost = Cost(usd=usd, source=cost.source if same else "genai-prices")


def judged_pass(verdict: Verdict, spec: LlmJudgeEvaluator) -> bool:
    """promptfoo's reading of a grader's reply: its `pass` (true when it gives none), and
    with a `threshold` the score must reach it too."""
    passed = True if verdict.passed is None else verdict.passed
    return passed and (spec.min_score is None or verdict.score >= spec.min_score)


def prompts(spec: LlmJudgeEvaluator, job: Job, answer: str) -> tuple[str, str]:
    """(system, user). A custom prompt with placeholders (`{{ candidate_answer }}`, or
    `${candidate_answer}`) is the user prompt, filled in; one without is the judge's
    instructions, and the user prompt carries the case (AgentV's 2025 rule)."""
    values = template_values(job, answer)
    if spec.criteria:
        values |= {"criteria": spec.criteria, "expected_outcome": spec.criteria}
    sections = [
        (
            "expected_outcome",
            values["expected_outcome"]
            or "(none given: judge the answer on its own merits for the task)",
        ),
        ("question", job.request.question),
        *([("reference_answer", job.reference_answer)] if job.reference_answer else []),
        ("candidate_answer", answer),
    ]
    user = sectioned(sections)
    reply = PASS_REPLY_FORMAT if job.grading == "promptfoo" else REPLY_FORMAT
    system = f"{INSTRUCTIONS}\n\n{reply}"
    if spec.prompt is None:
        return system, user
    known = [n for n in PLACEHOLDER.findall(spec.prompt) if n in values]
    if known:
        filled = PLACEHOLDER.sub(lambda m: values.get(m.group(1), m.group(0)), spec.prompt)
        return system, filled
    if "${" in spec.prompt:
        return system, Template(spec.prompt).safe_substitute(values)
    return f"{spec.prompt}\n\n{reply}", user


def sectioned(sections: list[tuple[str, str]]) -> str:
    """The judge's material under `[[ ## title ## ]]` headers, as AgentV lays it out."""
    return "\n\n".join(f"[[ ## {title} ## ]]\n{body}" for title, body in sections)


def template_values(job: Job, answer: str) -> dict[str, str]:
    """What a judge prompt can name: AgentV's January names and its July ones."""
    chat = job.request.chat_prompt
    inputs = (
        [m.model_dump(exclude_none=True) for m in chat]
        if chat
        else [{"role": "user", "content": job.request.question}]
    )
    expected = (
        [{"role": "assistant", "content": job.reference_answer}] if job.reference_answer else []
    )
    output = [{"role": "assistant", "content": answer}]
    values = {
        "candidate_answer": answer.strip(),
        "question": job.request.question.strip(),
        "expected_outcome": (job.outcome or "").strip(),
        "reference_answer": (job.reference_answer or "").strip(),
        "input_messages": json.dumps(inputs, indent=2, ensure_ascii=False),
        "expected_messages": json.dumps(expected, indent=2, ensure_ascii=False),
        "output_messages": json.dumps(output, indent=2, ensure_ascii=False),
    }
    return values | {
        "output": values["candidate_answer"],
        "input": values["question"],
        "criteria": values["expected_outcome"],
        "expected_output": values["reference_answer"],
    }


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

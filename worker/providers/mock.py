"""The `mock` provider: canned, echoed or per-case answers, latency and injected failures.

It serves the quick start, the tests and the benchmarks. Injected failures are drawn from
a hash of the job id and attempt, so a run is reproducible and a retry can succeed.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import re
import time

from evalrelay.bridge.contract.job import Job
from evalrelay.bridge.evalfile.evaluators import compile_regex
from evalrelay.bridge.prompt.request import PromptRequest
from evalrelay.bridge.results.result import Status, Usage
from evalrelay.bridge.targets.settings import MockJudge, MockJudgeRule, MockTarget
from evalrelay.worker.providers.base import Provider, ProviderFailure, ProviderOutput


class MockProvider(Provider):
    settings: MockTarget

    def run(self, job: Job, deadline: float) -> ProviderOutput:
        pause, late = self._latency(deadline)
        if pause:
            time.sleep(pause)
        return self._output(job, late)

    async def arun(self, job: Job, deadline: float) -> ProviderOutput:
        """`run` on an event loop: its latency is a wait of the loop, no thread."""
        pause, late = self._latency(deadline)
        if pause:
            await asyncio.sleep(pause)
        return self._output(job, late)

    def _latency(self, deadline: float) -> tuple[float, bool]:
        """How long to wait, and whether the job's time runs out first (then only until it
        does)."""
        latency = self.settings.latency_ms / 1000
        if latency and latency > self.remaining(deadline):
            return self.remaining(deadline), True
        return latency, False

    def _output(self, job: Job, late: bool) -> ProviderOutput:
        if late:
            raise ProviderFailure(Status.TIMEOUT, "the job's time limit ran out")
        if self._fails(job):
            raise ProviderFailure(
                Status(self.settings.failure_kind),
                f"injected {self.settings.failure_kind} (mock failure_rate)",
            )
        settings = self.settings
        return ProviderOutput(
            answer=self._answer(job),
            model="mock",
            finish_reason="stop",
            tool_calls=[call.model_dump() for call in settings.tool_calls],
            usage=Usage(**settings.usage.model_dump()) if settings.usage else None,
            cost_usd=settings.cost_usd,
        )

    def _answer(self, job: Job) -> str:
        judge = self.settings.judge
        if judge:
            return _verdict(job.request.question, MockJudge() if judge is True else judge)
        if job.case_id in self.settings.responses:
            return self.settings.responses[job.case_id]
        if self.settings.echo:
            return last_user_text(job.request)
        return self.settings.response

    def _fails(self, job: Job) -> bool:
        if self.settings.failure_rate <= 0:
            return False
        digest = hashlib.sha256(f"{job.job_id}:{job.attempt}".encode()).digest()
        return int.from_bytes(digest[:8], "big") / 2**64 < self.settings.failure_rate


def _verdict(prompt: str, judge: MockJudge) -> str:
    """A judge's reply: the score of the first rule that fits the candidate answer (or the
    judge's own score), for each rubric item listed in the prompt or as a whole."""
    answer = _candidate_answer(prompt)
    score, why = judge.score, "mock judge: no rule fits"
    for rule in judge.rules:
        if _fits(rule, answer):
            score, why = rule.score, f"mock judge: {_described(rule)}"
            break
    if not judge.rules:
        why = "mock judge"
    ids = re.findall(r"^- \[([^\]]+)\]", prompt, re.MULTILINE)
    if ids:
        met = score >= 0.5
        checks = [{"id": i, "satisfied": met, "reasoning": why} for i in ids]
        return json.dumps({"checks": checks, "overall_reasoning": why})
    return json.dumps({"score": score, "hits": [], "misses": [], "reasoning": why})


def _candidate_answer(prompt: str) -> str:
    """The answer under the judge prompt's `candidate_answer` header; a custom prompt has
    none, and its rules look at the whole prompt."""
    found = CANDIDATE_SECTION.search(prompt)
    return found[1] if found else prompt


CANDIDATE_SECTION = re.compile(
    r"^\[\[ ## candidate_answer ## \]\]\n(.*?)(?=\n\n\[\[ ## |\Z)", re.S | re.M
)


def _fits(rule: MockJudgeRule, answer: str) -> bool:
    if rule.contains is not None:
        return rule.contains in answer
    assert rule.matches is not None
    try:
        pattern = compile_regex(rule.matches, None)
        return pattern.search(answer, timeout=RULE_SECONDS, concurrent=True) is not None
    except TimeoutError:
        raise ProviderFailure(
            Status.MODEL_FAILURE,
            f"mock judge rule /{rule.matches}/ still matching after {RULE_SECONDS:g} s; "
            "rewrite it without nested repetition",
        ) from None


RULE_SECONDS = 1.0
"""How long one rule's pattern may search: the targets file is trusted, but a pattern that
backtracks without end should still not hold a worker."""


def _described(rule: MockJudgeRule) -> str:
    if rule.contains is not None:
        return f"contains {rule.contains!r}"
    return f"matches /{rule.matches}/"


def last_user_text(request: PromptRequest) -> str:
    if request.chat_prompt is None:
        return request.question
    users = [m.content for m in request.chat_prompt if m.role == "user"]
    return users[-1] if users else ""

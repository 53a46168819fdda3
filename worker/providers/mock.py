"""The `mock` provider: canned, echoed or per-case answers, latency and injected failures.

It serves the quick start, the tests and the benchmarks. Injected failures are drawn from
a hash of the job id and attempt, so a run is reproducible and a retry can succeed.
"""

from __future__ import annotations

import hashlib
import json
import re
import time

from bridge.prompt.build import PromptRequest
from bridge.queue.jobs import Job
from bridge.results.result import Status, Usage
from bridge.targets.settings import MockTarget
from worker.providers.base import Provider, ProviderFailure, ProviderOutput


class MockProvider(Provider):
    settings: MockTarget

    def run(self, job: Job, deadline: float) -> ProviderOutput:
        latency = self.settings.latency_ms / 1000
        if latency:
            if latency > self.remaining(deadline):
                time.sleep(self.remaining(deadline))
                raise ProviderFailure(Status.TIMEOUT, "the job's time limit ran out")
            time.sleep(latency)
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
        if self.settings.judge:
            return _verdict(job.request.question)
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


def _verdict(prompt: str) -> str:
    """A judge's reply that finds everything right: each rubric item listed in the prompt
    is satisfied, or the score is 1."""
    ids = re.findall(r"^- \[([^\]]+)\]", prompt, re.MULTILINE)
    if ids:
        checks = [{"id": i, "satisfied": True, "reasoning": "mock judge"} for i in ids]
        return json.dumps({"checks": checks, "overall_reasoning": "mock judge: all met"})
    return json.dumps({"score": 1.0, "hits": [], "misses": [], "reasoning": "mock judge"})


def last_user_text(request: PromptRequest) -> str:
    if request.chat_prompt is None:
        return request.question
    users = [m.content for m in request.chat_prompt if m.role == "user"]
    return users[-1] if users else ""

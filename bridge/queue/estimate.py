"""`run --estimate`: what a campaign would cost, per target, before anything is sent.

Input tokens are counted as a quarter of the characters the request carries (its
messages and tools, as JSON), plus `MESSAGE_OVERHEAD` per message: no tokenizer is
assumed on the submitting machine (vendors' own need downloads), and English text runs
near four characters a token. Output tokens are the target's `max_tokens`, else
`DEFAULT_OUTPUT_TOKENS`: an upper bound when answers stop early. Prices come from the
same database as the results' (`bridge.results.pricing`).
"""

from __future__ import annotations

import math
from collections.abc import Iterable

from pydantic import BaseModel

from bridge.queue.jobs import Job
from bridge.results.pricing import PRICE_PROVIDERS, cost_of
from bridge.results.result import Usage

CHARS_PER_TOKEN = 4
MESSAGE_OVERHEAD = 4
"""Tokens a chat format adds around each message (role, separators)."""

DEFAULT_OUTPUT_TOKENS = 256
"""Expected answer length of a target without `max_tokens`."""


class TargetEstimate(BaseModel):
    jobs: int = 0
    input_tokens: int = 0
    output_tokens: int = 0
    usd: float = 0.0
    unpriced: int = 0
    """Jobs whose model the price database does not know (agents, mock, house models)."""


def input_tokens(job: Job) -> int:
    request = job.request
    messages = request.chat_prompt or []
    text = request.model_dump_json(include={"chat_prompt", "tools"}, exclude_none=True)
    if not messages:
        text += request.question + (request.system_prompt or "")
    count = max(len(messages), 1)
    return math.ceil(len(text) / CHARS_PER_TOKEN) + MESSAGE_OVERHEAD * count


def output_tokens(job: Job) -> int:
    limit = job.target.settings.get("max_tokens") or job.target.settings.get("max_output_tokens")
    return int(limit) if limit else DEFAULT_OUTPUT_TOKENS


def estimate(jobs: Iterable[Job]) -> dict[str, TargetEstimate]:
    """Jobs, tokens and dollars per target."""
    found: dict[str, TargetEstimate] = {}
    for job in jobs:
        one = found.setdefault(job.target.name, TargetEstimate())
        usage = Usage(input_tokens=input_tokens(job), output_tokens=output_tokens(job))
        one.jobs += 1
        one.input_tokens += usage.input_tokens or 0
        one.output_tokens += usage.output_tokens or 0
        model = job.target.settings.get("model")
        cost = cost_of(usage, [model], None, PRICE_PROVIDERS.get(job.target.kind))
        if cost is None:
            one.unpriced += 1
        else:
            one.usd += cost.usd
    return found

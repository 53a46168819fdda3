"""`run --estimate`: what a campaign would cost, per target, before anything is sent.

Input tokens are counted over the messages an API target is sent (`api_messages`: the
default system prompt included): a quarter of each message's characters, plus
`MESSAGE_OVERHEAD` per message and `REPLY_PRIMING` once, as OpenAI documents its chat
format; tools count as a quarter of their JSON. No tokenizer is assumed on the submitting
machine (vendors' own need downloads), and English text runs near four characters a token.

Output tokens: a case's expected answer, when it has one, is the best guess of the
answer's length (`ANSWER_TO_REFERENCE` times its tokens, at most `max_tokens`); else the target's
`max_tokens`, else `DEFAULT_OUTPUT_TOKENS`, an upper bound when answers stop early.
Prices come from the same database as the results' (`bridge.results.pricing`).
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterable

from pydantic import BaseModel

from evalrelay.bridge.contract.job import Job
from evalrelay.bridge.prompt.request import api_messages
from evalrelay.bridge.results.pricing import PRICE_PROVIDERS, cost_of
from evalrelay.bridge.results.result import Usage

CHARS_PER_TOKEN = 4
MESSAGE_OVERHEAD = 3
"""Tokens a chat format adds around each message (role, separators)."""
REPLY_PRIMING = 3
"""Tokens a chat format adds once, to start the answer."""

ANSWER_TO_REFERENCE = 1.5
"""Answers run longer than the terse reference answers eval files hold: a guess, checked
only against the loopback model of tests/bridge/queue/test_estimate.py, not real models."""

DEFAULT_OUTPUT_TOKENS = 256
"""Expected answer length of a target without `max_tokens`."""


class TargetEstimate(BaseModel):
    jobs: int = 0
    input_tokens: int = 0
    output_tokens: int = 0
    usd: float = 0.0
    unpriced: int = 0
    """Jobs whose model the price database does not know (agents, mock, house models)."""


def tokens_in(text: str) -> int:
    return math.ceil(len(text) / CHARS_PER_TOKEN)


def input_tokens(job: Job) -> int:
    messages = api_messages(job.request)
    count = sum(tokens_in(m.content) + MESSAGE_OVERHEAD for m in messages) + REPLY_PRIMING
    for message in messages:
        if message.tool_calls:
            count += tokens_in(json.dumps([c.model_dump(mode="json") for c in message.tool_calls]))
    if job.request.tools:
        count += tokens_in(json.dumps([t.model_dump(mode="json") for t in job.request.tools]))
    return count


def output_tokens(job: Job) -> int:
    settings = job.target.settings
    limit = settings.get("max_tokens") or settings.get("max_output_tokens")
    if job.reference_answer:
        guess = math.ceil(ANSWER_TO_REFERENCE * tokens_in(job.reference_answer))
        return min(guess, int(limit)) if limit else guess
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

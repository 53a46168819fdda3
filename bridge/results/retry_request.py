"""`retry` during a run: asking the campaign's live collector to set lines aside.

The collector appends to the campaign's file; anyone else rewriting it meanwhile would
lose lines. So `retry` leaves a request in Redis, the collector holding the campaign
takes it (atomically: a request is taken once, or withdrawn by `retry`, never both),
sets the chosen lines aside between two of its writes (`bridge.results.set_aside`) and
answers with the attempts it moved; `retry` then sends those jobs again.
"""

from __future__ import annotations

import uuid
from typing import cast

import redis
from pydantic import BaseModel, ConfigDict

from evalrelay.bridge.keys import retry_answer_key, retry_request_key
from evalrelay.bridge.lua_scripts import WITHDRAW_RETRY
from evalrelay.bridge.results.result import AttemptSummary, Status

REQUEST_TTL_SECONDS = 300
"""A request nobody took, or an answer nobody read, goes after this long."""


class RetryRequest(BaseModel):
    """Set aside the lines of the campaign whose status is one of `statuses`."""

    model_config = ConfigDict(extra="forbid")

    request_id: str
    statuses: list[Status]
    by: str


class RetryAnswer(BaseModel):
    """What the collector set aside, by job id, or why it could not (nothing moved then)."""

    model_config = ConfigDict(extra="forbid")

    collector: str
    moved: dict[str, AttemptSummary] = {}
    error: str | None = None


def post_request(
    client: redis.Redis, campaign_id: str, statuses: list[Status], by: str
) -> RetryRequest | None:
    """Leave a request for the campaign's collector; None while another one waits."""
    request = RetryRequest(request_id=uuid.uuid4().hex, statuses=statuses, by=by)
    posted = client.set(
        retry_request_key(campaign_id), request.model_dump_json(), nx=True, ex=REQUEST_TTL_SECONDS
    )
    return request if posted else None


def withdraw(client: redis.Redis, campaign_id: str, request: RetryRequest) -> bool:
    """Take the request back; False when a collector took it first (its answer will come)."""
    return bool(client.eval(WITHDRAW_RETRY, 1, retry_request_key(campaign_id), request.request_id))


def take_requests(client: redis.Redis, campaign_ids: list[str]) -> dict[str, RetryRequest]:
    """The requests waiting for these campaigns, taken: no one else gets them. One round
    trip when there is none (the usual case)."""
    keys = [retry_request_key(c) for c in campaign_ids]
    waiting = cast(list[str | None], client.mget(keys)) if keys else []
    taken: dict[str, RetryRequest] = {}
    for campaign_id, raw in zip(campaign_ids, waiting, strict=True):
        if raw is not None:
            raw = cast(str | None, client.getdel(retry_request_key(campaign_id)))
            if raw is not None:  # else `retry` withdrew it meanwhile
                taken[campaign_id] = RetryRequest.model_validate_json(raw)
    return taken


def answer(client: redis.Redis, request: RetryRequest, reply: RetryAnswer) -> None:
    key = retry_answer_key(request.request_id)
    client.set(key, reply.model_dump_json(), ex=REQUEST_TTL_SECONDS)


def answer_to(client: redis.Redis, request: RetryRequest) -> RetryAnswer | None:
    """The collector's answer, read once; None while there is none."""
    raw = cast(str | None, client.getdel(retry_answer_key(request.request_id)))
    return RetryAnswer.model_validate_json(raw) if raw is not None else None

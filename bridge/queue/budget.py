"""A campaign's budget in dollars, spent across the whole fleet.

Each worker charges what a result cost (`bridge.results.pricing`), its answer and its
judges' calls in one charge, once the result is published, so a job is charged once
however often it was delivered. Before each call, the worker reserves what it may cost
(`bridge.queue.admission`); the charge settles that reservation in the same step. The
charge and the check are one Lua script: the charge that reaches the limit pauses the
campaign (`bridge.queue.steering`) in the same step, with a line in its audit, and no
worker starts another of its calls. Amounts are kept as whole nanodollars so that every
worker adds them exactly.
"""

from __future__ import annotations

import time
from typing import cast

import redis
from pydantic import BaseModel

from evalrelay.bridge.contract.campaign_state import JOB_TTL_SECONDS
from evalrelay.bridge.keys import audit_key, budget_key, paused_key
from evalrelay.bridge.lua_scripts import CHARGE
from evalrelay.bridge.queue.steering import AUDIT_LENGTH, Change, Paused, record

NANO = 1_000_000_000

BUDGET_REASON = "budget reached"

HELD_PREFIX = "held:"
"""The budget's hash field of one job's reservation: `held:<job_id>`."""


class Budget(BaseModel):
    limit_usd: float
    spent_usd: float
    reserved_usd: float = 0.0
    """What the calls under way may cost, held back from the budget until charged."""


def nanodollars(usd: float) -> int:
    return round(usd * NANO)


def set_budget(client: redis.Redis, campaign_id: str, usd: float, by: str) -> None:
    """Give the campaign a budget (or a new one), before or while it runs."""
    client.hset(budget_key(campaign_id), "limit", nanodollars(usd))
    client.hsetnx(budget_key(campaign_id), "spent", 0)
    client.expire(budget_key(campaign_id), JOB_TTL_SECONDS)
    change = Change(action="budget", at=time.time(), by=by, detail=f"${usd:g}")
    record(client, campaign_id, change)


def budget_of(client: redis.Redis, campaign_id: str) -> Budget | None:
    raw = cast(dict[str, str], client.hgetall(budget_key(campaign_id)))
    if "limit" not in raw:
        return None
    return Budget(
        limit_usd=int(raw["limit"]) / NANO,
        spent_usd=int(raw.get("spent", 0)) / NANO,
        reserved_usd=max(0, int(raw.get("reserved", 0))) / NANO,
    )


def charge(
    client: redis.Redis, campaign_id: str, usd: float | None, by: str, job_id: str = ""
) -> bool:
    """Add what one result cost (answer and judges), settling the reservation its job
    held; `usd` None (no price) only settles. True when it spent the budget and paused the
    campaign."""
    now = time.time()
    state = Paused(reason=BUDGET_REASON, at=now, by=by).model_dump_json()
    keys = (budget_key(campaign_id), paused_key(campaign_id), audit_key(campaign_id))
    detail = f"{BUDGET_REASON} after a result of ${usd or 0:g}"
    args = (nanodollars(usd or 0), state, str(now), by, detail, AUDIT_LENGTH, JOB_TTL_SECONDS)
    held, priced = HELD_PREFIX + job_id, "0" if usd is None else "1"
    return int(client.eval(CHARGE, len(keys), *keys, *args, held, priced)) == 2

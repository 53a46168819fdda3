"""A campaign's budget in dollars, spent across the whole fleet.

Each worker charges what a result cost (`bridge.results.pricing`), its answer and its
judges' calls in one charge, once the result is published, so a job is charged once
however often it was delivered. The charge and the
check are one Lua script: the charge that reaches the limit pauses the campaign
(`bridge.queue.steering`) in the same step, with a line in its audit, and no worker starts
another of its jobs. Calls already under way when the limit is reached still finish and
are charged: the overshoot is at most the calls the fleet runs at once. Amounts are kept
as whole nanodollars so that every worker adds them exactly.
"""

from __future__ import annotations

import time
from typing import cast

import redis
from pydantic import BaseModel

from bridge.keys import audit_key, budget_key, paused_key
from bridge.queue.campaigns import JOB_TTL_SECONDS
from bridge.queue.steering import AUDIT_LENGTH, Change, Paused, record

NANO = 1_000_000_000

BUDGET_REASON = "budget reached"

_CHARGE = """
if redis.call('EXISTS', KEYS[1]) == 0 then return 0 end
local spent = redis.call('HINCRBY', KEYS[1], 'spent', ARGV[1])
local limit = tonumber(redis.call('HGET', KEYS[1], 'limit'))
if spent >= limit and redis.call('SET', KEYS[2], ARGV[2], 'NX', 'EX', ARGV[7]) then
  redis.call('XADD', KEYS[3], 'MAXLEN', '~', ARGV[6], '*',
    'action', 'pause', 'at', ARGV[3], 'by', ARGV[4], 'detail', ARGV[5])
  return 2
end
return 1
"""
"""Charge; 2 when this charge reached the limit and paused the campaign, 1 when charged,
0 when the campaign has no budget."""


class Budget(BaseModel):
    limit_usd: float
    spent_usd: float


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
    return Budget(limit_usd=int(raw["limit"]) / NANO, spent_usd=int(raw.get("spent", 0)) / NANO)


def charge(client: redis.Redis, campaign_id: str, usd: float, by: str) -> bool:
    """Add what one result cost (answer and judges); True when it spent the budget and
    paused the campaign."""
    now = time.time()
    state = Paused(reason=BUDGET_REASON, at=now, by=by).model_dump_json()
    keys = (budget_key(campaign_id), paused_key(campaign_id), audit_key(campaign_id))
    detail = f"{BUDGET_REASON} after a result of ${usd:g}"
    args = (nanodollars(usd), state, str(now), by, detail, AUDIT_LENGTH, JOB_TTL_SECONDS)
    return int(client.eval(_CHARGE, len(keys), *keys, *args)) == 2

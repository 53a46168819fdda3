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

from bridge.contract.campaign_state import JOB_TTL_SECONDS
from bridge.keys import audit_key, budget_key, paused_key
from bridge.queue.steering import AUDIT_LENGTH, Change, Paused, record

NANO = 1_000_000_000

BUDGET_REASON = "budget reached"

HELD_PREFIX = "held:"
"""The budget's hash field of one job's reservation: `held:<job_id>`."""

# Charge one result to its campaign's budget, settling the reservation its call held.
#   KEYS[1]  the budget hash (`budget_key`): limit, spent, reserved, charged, held:<job>
#   KEYS[2]  the campaign's pause mark (`paused_key`), set when this charge spends the budget
#   KEYS[3]  the campaign's steering audit stream (`audit_key`)
#   ARGV[1]  the result's cost in nanodollars
#   ARGV[2]  the pause mark's JSON (`Paused`), ARGV[3] now (seconds), ARGV[4] who charged,
#   ARGV[5]  the audit entry's detail, ARGV[6] the audit stream's length,
#   ARGV[7]  the pause mark's time to live (seconds)
#   ARGV[8]  the job's reservation field (`held:<job_id>`)
#   ARGV[9]  '1' when the result was priced and published, '0' to only give back the reservation
# Returns 0 when the campaign has no budget, 1 when charged, 2 when this charge paused it.
_CHARGE = """
if redis.call('EXISTS', KEYS[1]) == 0 then return 0 end
local own = redis.call('HGET', KEYS[1], ARGV[8])
if own then
  redis.call('HDEL', KEYS[1], ARGV[8])
  redis.call('HINCRBY', KEYS[1], 'reserved', -tonumber(own))
end
if ARGV[9] == '0' then return 1 end
redis.call('HINCRBY', KEYS[1], 'charged', 1)
local spent = redis.call('HINCRBY', KEYS[1], 'spent', ARGV[1])
local limit = tonumber(redis.call('HGET', KEYS[1], 'limit'))
if spent >= limit and redis.call('SET', KEYS[2], ARGV[2], 'NX', 'EX', ARGV[7]) then
  redis.call('XADD', KEYS[3], 'MAXLEN', '~', ARGV[6], '*',
    'action', 'pause', 'at', ARGV[3], 'by', ARGV[4], 'detail', ARGV[5])
  return 2
end
return 1
"""
"""Settle the job's reservation (ARGV[8], its field) and charge (unless ARGV[9] is 0: a
result with no price only gives its reservation back); 2 when this charge reached the
limit and paused the campaign, 1 when charged, 0 when the campaign has no budget."""


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
    return int(client.eval(_CHARGE, len(keys), *keys, *args, held, priced)) == 2

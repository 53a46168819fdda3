"""Admitting a job's call to its target: the last step before the request leaves.

A job is checked when it begins (`worker.lease`), but it may then wait a long time for its
target's `max_concurrency` slot, its rate limit or a retry's back-off. So each call is
admitted again, in one round trip, once every wait is over: a campaign paused or cancelled
meanwhile starts no call, and a campaign with a budget reserves what the call may cost
before it starts, the reservation settled by the result's charge (`bridge.queue.budget`).

A call starts only when what was spent, plus the reservations of the calls under way,
plus its own estimate stays within the limit. Short of that it waits for the calls under
way to be charged; with none under way the budget is reached and the campaign is paused.
The estimate is the campaign's mean cost per charged result. Before any result is
charged there is nothing to go by (a request's estimate from its text and the model's
price, `bridge.queue.estimate`, counts every output token it may take): a call fits then
if its estimate does, else it runs alone, holding what is left. The overshoot is at most
what the calls under way cost beyond their estimates, and never more than they cost.
"""

from __future__ import annotations

import enum
import hashlib
import json
import time

import redis

from bridge.contract.campaign_state import JOB_TTL_SECONDS
from bridge.keys import audit_key, budget_key, cancel_key, paused_key
from bridge.queue.budget import BUDGET_REASON, HELD_PREFIX, NANO
from bridge.queue.steering import AUDIT_LENGTH

_ADMIT = """
if redis.call('EXISTS', KEYS[1]) == 1 then return 'cancelled' end
if redis.call('EXISTS', KEYS[2]) == 1 then return 'paused' end
if redis.call('EXISTS', KEYS[3]) == 0 then return 'admitted' end
local b = redis.call('HMGET', KEYS[3], 'limit', 'spent', 'reserved', 'charged')
local limit, spent = tonumber(b[1]), tonumber(b[2] or '0')
local reserved, charged = tonumber(b[3] or '0'), tonumber(b[4] or '0')
local field = ARGV[9] .. ARGV[1]
local own = tonumber(redis.call('HGET', KEYS[3], field) or '0')
reserved = reserved - own
local estimate = tonumber(ARGV[2])
if charged > 0 then
  estimate = math.ceil(spent / charged)
elseif estimate < 0 then
  return 'estimate'
end
if spent < limit and spent + reserved + estimate > limit then
  if reserved > 0 then return 'wait' end
  -- Nothing charged yet to go by: one call alone, holding what is left.
  if charged == 0 then estimate = limit - spent end
end
if spent >= limit or spent + reserved + estimate > limit then
  if redis.call('SET', KEYS[2], ARGV[3], 'NX', 'EX', ARGV[8]) then
    redis.call('XADD', KEYS[4], 'MAXLEN', '~', ARGV[7], '*',
      'action', 'pause', 'at', ARGV[4], 'by', ARGV[5], 'detail', ARGV[6])
  end
  return 'budget'
end
redis.call('HINCRBY', KEYS[3], 'reserved', estimate - own)
redis.call('HSET', KEYS[3], field, estimate)
return 'reserved'
"""
"""KEYS: cancelled, paused, budget, audit. ARGV: job id, estimate (nanodollars, -1 when
not made yet), the pause's state, now, by, the audit's detail, audit length, time to live,
the reservation's field prefix. A job's earlier reservation (a retried call) is replaced,
not added to."""

_RELEASE = """
local own = redis.call('HGET', KEYS[1], ARGV[1])
if own then
  redis.call('HDEL', KEYS[1], ARGV[1])
  redis.call('HINCRBY', KEYS[1], 'reserved', -tonumber(own))
end
return own and 1 or 0
"""


class Admitted(enum.Enum):
    """What admitting a call found."""

    FREE = "admitted"
    """Admitted; the campaign has no budget."""
    RESERVED = "reserved"
    """Admitted, its cost reserved from the budget until the result's charge settles it."""
    WAIT = "wait"
    """The budget is held by calls under way: ask again once one is charged."""
    ESTIMATE = "estimate"
    """The campaign has no charge yet to go by: ask again with the call's estimate."""
    PAUSED = "paused"
    CANCELLED = "cancelled"
    BUDGET = "budget"
    """The budget cannot cover the call: the campaign is paused now."""

    @property
    def stops(self) -> bool:
        """The campaign is steered away: the call must not start."""
        return self in (Admitted.PAUSED, Admitted.CANCELLED, Admitted.BUDGET)


_ADMIT_SHA = hashlib.sha1(_ADMIT.encode()).hexdigest()
"""The script is sent by its hash (EVALSHA), its text only when Redis does not have it: it
runs once for every call to a target."""

_DETAIL = f"{BUDGET_REASON}: the next call would pass the limit"


def admit(
    client: redis.Redis, campaign_id: str, job_id: str, by: str, estimate_usd: float | None = None
) -> Admitted:
    """One round trip: may this job's call start now?"""
    now = time.time()
    # A `Paused`, written only if this call pauses the campaign (json: no model per call).
    state = json.dumps({"reason": BUDGET_REASON, "at": now, "by": by})
    keys = [
        cancel_key(campaign_id),
        paused_key(campaign_id),
        budget_key(campaign_id),
        audit_key(campaign_id),
    ]
    estimate = -1 if estimate_usd is None else round(estimate_usd * NANO)
    args: list[str | int] = [job_id, estimate, state, str(now), by, _DETAIL, AUDIT_LENGTH]
    args += [JOB_TTL_SECONDS, HELD_PREFIX]
    try:
        found = client.evalsha(_ADMIT_SHA, len(keys), *keys, *args)
    except redis.exceptions.NoScriptError:
        found = client.eval(_ADMIT, len(keys), *keys, *args)
    return Admitted(str(found))


def release(client: redis.Redis, campaign_id: str, job_id: str) -> bool:
    """Give back the job's reservation (its call failed, or it was stepped aside); True when
    it held one."""
    return bool(client.eval(_RELEASE, 1, budget_key(campaign_id), HELD_PREFIX + job_id))

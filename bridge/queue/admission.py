"""Admitting a job's call to its target: the last step before the request leaves.

A job is checked when it begins (`bridge.delivery.lease`), but it may then wait a long time for its
target's `max_concurrency` slot, its rate limit or a retry's back-off. So each call is
admitted again, in one round trip, once every wait is over: a campaign paused, cancelled
or compacted meanwhile starts no call, and a campaign with a budget reserves what the call may cost
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

from evalrelay.bridge.contract.campaign_state import JOB_TTL_SECONDS
from evalrelay.bridge.keys import audit_key, budget_key, cancel_key, compacted_key, paused_key
from evalrelay.bridge.lua_scripts import ADMIT, RELEASE_RESERVATION
from evalrelay.bridge.queue.budget import BUDGET_REASON, HELD_PREFIX, NANO
from evalrelay.bridge.queue.steering import AUDIT_LENGTH


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
    COMPACTED = "compacted"
    """A late copy: its campaign is complete and compacted, the job's line in its file
    (a copy leased before a worker was stopped, say). It is dropped without a call."""
    BUDGET = "budget"
    """The budget cannot cover the call: the campaign is paused now."""

    @property
    def stops(self) -> bool:
        """The campaign is steered away: the call must not start."""
        return self in (Admitted.PAUSED, Admitted.CANCELLED, Admitted.BUDGET, Admitted.COMPACTED)


_ADMIT_SHA = hashlib.sha1(ADMIT.encode()).hexdigest()
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
        compacted_key(campaign_id),
    ]
    estimate = -1 if estimate_usd is None else round(estimate_usd * NANO)
    args: list[str | int] = [job_id, estimate, state, str(now), by, _DETAIL, AUDIT_LENGTH]
    args += [JOB_TTL_SECONDS, HELD_PREFIX]
    try:
        found = client.evalsha(_ADMIT_SHA, len(keys), *keys, *args)
    except redis.exceptions.NoScriptError:
        found = client.eval(ADMIT, len(keys), *keys, *args)
    return Admitted(str(found))


def release(client: redis.Redis, campaign_id: str, job_id: str) -> bool:
    """Give back the job's reservation (its call failed, or it was stepped aside); True when
    it held one."""
    return bool(client.eval(RELEASE_RESERVATION, 1, budget_key(campaign_id), HELD_PREFIX + job_id))

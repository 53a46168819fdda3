"""A campaign's state that both sides read and write in Redis, apart from its jobs: the
cancel mark (set by a command, read by the worker before a job starts), Redis's epoch
mark (a restarted empty Redis lacks it) and how long a campaign's keys live.
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Sequence

import redis

from evalrelay.bridge.keys import CANCEL_ENDS, cancel_key, epoch_key
from evalrelay.bridge.results.retention import RETENTION_SECONDS

JOB_TTL_SECONDS = RETENTION_SECONDS
"""How long a campaign stays in Redis (its jobs are removed once it is complete:
`bridge.results.retention`)."""


def cancel(client: redis.Redis, campaign_id: str, *, ends: bool = False) -> None:
    """Workers skip the campaign's jobs from now on; `ends`: each gets a `cancelled` line."""
    value = f"{CANCEL_ENDS if ends else 'interrupted'} {time.time()}"
    client.set(cancel_key(campaign_id), value, ex=JOB_TTL_SECONDS)


def cancel_ends(client: redis.Redis, campaign_id: str) -> bool:
    """The campaign was cancelled for good: its jobs not started get `cancelled` lines."""
    return str(client.get(cancel_key(campaign_id)) or "").startswith(CANCEL_ENDS)


def ended_many(client: redis.Redis, campaign_ids: Sequence[str]) -> set[str]:
    """The campaigns of `campaign_ids` cancelled for good, in one round trip."""
    if not campaign_ids:
        return set()
    values = client.mget([cancel_key(c) for c in campaign_ids])
    return {
        c for c, v in zip(campaign_ids, values, strict=True) if str(v or "").startswith(CANCEL_ENDS)
    }


def uncancel(client: redis.Redis, campaign_id: str) -> None:
    client.delete(cancel_key(campaign_id))


def current_epoch(client: redis.Redis) -> str:
    """This Redis's mark, made now if missing: a long-lived process that saw another one
    knows Redis lost its data since (whoever noticed first made a new mark)."""
    pipe = client.pipeline(transaction=False)
    pipe.set(epoch_key(), uuid.uuid4().hex, nx=True)
    pipe.get(epoch_key())
    return str(pipe.execute()[1])

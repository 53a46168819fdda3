"""What a campaign paid for twice: its target calls past one per job, and why.

Every job is meant to call its target once. Some call it again, each for a reason the
worker that published the result knows (`bridge.lua_scripts.PUBLISH` counts them, per
campaign, in the same step):

- `duplicate`: a copy ran to its end after another had published (a job sent again while
  its worker was cut off or stopped, and the first copy finished after all);
- `late copy`: a copy finished after the campaign was complete (its result was dropped);
- `retry`: a later attempt, asked for (`retry`, `resume` of failed jobs).

A copy whose worker died mid-call paid for a call that nobody counts (nothing is left to
publish it). A publication sent again because its reply was lost with the connection is
one call, not two: it finds the done mark its first send wrote (`bridge.done_marks`).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import cast

import redis

from evalrelay.bridge.keys import paid_again_key

WHY = ("duplicate", "late copy", "retry")
"""The reasons, in the order they are shown."""


def paid_again_many(client: redis.Redis, campaign_ids: Sequence[str]) -> dict[str, dict[str, int]]:
    """Each campaign's calls past one per job, by why (none for a campaign with none)."""
    pipe = client.pipeline(transaction=False)
    for campaign_id in campaign_ids:
        pipe.hgetall(paid_again_key(campaign_id))
    replies = cast(list[dict[str, str]], pipe.execute())
    return {
        campaign_id: {why: int(number) for why, number in reply.items()}
        for campaign_id, reply in zip(campaign_ids, replies, strict=True)
    }


def paid_again(client: redis.Redis, campaign_id: str) -> dict[str, int]:
    return paid_again_many(client, [campaign_id])[campaign_id]


def paid_again_text(counts: dict[str, int]) -> str:
    """E.g. `3 calls past one per job: 2 duplicates, 1 late copy`; empty for none."""
    total = sum(counts.values())
    if not total:
        return ""
    parts = [
        f"{counts[why]} {why}" for why in (*WHY, *sorted(set(counts) - set(WHY))) if counts.get(why)
    ]
    calls = "call" if total == 1 else "calls"
    return f"{total} {calls} past one per job: {', '.join(parts)}"

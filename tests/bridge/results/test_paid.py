"""The calls a campaign paid for twice, read back and said."""

from __future__ import annotations

import redis

from evalrelay.bridge.keys import paid_again_key
from evalrelay.bridge.results.paid import paid_again_many, paid_again_text


def test_calls_paid_again_are_read_per_campaign_and_said_by_why(client: redis.Redis) -> None:
    client.hset(paid_again_key("a"), mapping={"late copy": 1, "duplicate": 2})
    counts = paid_again_many(client, ["a", "b"])
    assert counts == {"a": {"late copy": 1, "duplicate": 2}, "b": {}}
    assert paid_again_text(counts["a"]) == "3 calls past one per job: 2 duplicate, 1 late copy"
    assert paid_again_text({"retry": 1}) == "1 call past one per job: 1 retry"
    assert paid_again_text(counts["b"]) == ""

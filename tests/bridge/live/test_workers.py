"""Workers as `status` lists them: those heard from lately, and a count of the others."""

from __future__ import annotations

import json
import time

import redis

from bridge.keys import workers_key
from bridge.live.workers import live_workers, serving


def test_live_workers_are_listed_and_silent_ones_counted(client: redis.Redis) -> None:
    now = time.time()
    client.hset(
        workers_key(), "w-live", json.dumps({"seen": now - 1, "queues": ["api"], "host": "h1"})
    )
    client.hset(workers_key(), "w-agents", json.dumps({"seen": now, "queues": ["agent.cli"]}))
    client.hset(workers_key(), "w-late", json.dumps({"seen": now - 300, "queues": ["api"]}))
    client.hset(workers_key(), "w-odd", "not json")
    live, silent = live_workers(client)
    assert [(w.name, w.queues, w.host) for w in live] == [
        ("w-agents", ["agent.cli"], None),
        ("w-live", ["api"], "h1"),
    ]
    assert 0 <= live[1].seen_seconds_ago < 5 and silent == 1
    assert [w.name for w in serving(live, ["api", "agent.codex"])] == ["w-live"]
    assert sorted(client.hkeys(workers_key())) == ["w-agents", "w-late", "w-live", "w-odd"]

"""Workers as `status` lists them: those heard from lately, and a count of the others."""

from __future__ import annotations

import json
import time

import redis

from evalrelay.bridge.keys import workers_key
from evalrelay.bridge.live.workers import live_workers, serving
from evalrelay.worker.app import WORKER_HEARTBEAT_SECONDS
from tests.clocks import SKEW, skewed_clock
from tests.conftest import Processes


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


def test_workers_300_s_behind_and_ahead_are_live_and_just_seen(
    processes: Processes, client: redis.Redis
) -> None:
    """`serve` ages workers on Redis's clock, the one their `seen` is written on."""
    for name, clock in (("ahead@test", SKEW), ("behind@test", -SKEW)):
        processes.worker(client, name, "-c", "1", extra_env=skewed_clock(clock))
    live, silent = live_workers(client)
    assert [w.name for w in live] == ["ahead@test", "behind@test"] and silent == 0
    assert all(0 <= w.seen_seconds_ago <= WORKER_HEARTBEAT_SECONDS + 2 for w in live), live

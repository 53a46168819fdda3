"""The worker's entries in Redis: a worker that died without a word leaves `status`."""

from __future__ import annotations

import json
import time

import redis

from bridge.delivery.holders import GONE_SECONDS, forget_gone
from bridge.keys import workers_key


def test_workers_silent_too_long_are_forgotten_and_live_ones_kept(client: redis.Redis) -> None:
    now = time.time()
    client.hset(workers_key(), "killed@test", json.dumps({"seen": now - GONE_SECONDS - 1}))
    client.hset(workers_key(), "alive@test", json.dumps({"seen": now}))
    forget_gone(client, workers_key())
    assert client.hkeys(workers_key()) == ["alive@test"]

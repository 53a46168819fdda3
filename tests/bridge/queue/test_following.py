"""Following a campaign: a cluster run with no worker says so instead of waiting silently."""

from __future__ import annotations

import json
import time
from datetime import UTC, datetime

import redis

from evalrelay.bridge.keys import workers_key
from evalrelay.bridge.queue.campaigns import CampaignInfo
from evalrelay.bridge.queue.following import Unserved, statistics_due, unserved_queues

INFO = CampaignInfo(
    campaign_id="c",
    created_at=datetime.now(UTC),
    sources=[],
    targets=["t"],
    total=1,
    out_dir="/tmp",
)


def test_finds_no_worker_when_none_reported_lately(client: redis.Redis) -> None:
    client.hset(workers_key(), "old@host", json.dumps({"seen": time.time() - 600}))
    assert unserved_queues(client, INFO) == Unserved(queues="api", any_alive=False)


def test_finds_nothing_missing_while_a_worker_is_alive(client: redis.Redis) -> None:
    client.hset(workers_key(), "w@host", json.dumps({"seen": time.time()}))
    assert unserved_queues(client, INFO) is None


def test_finds_the_campaigns_queues_that_live_workers_do_not_serve(client: redis.Redis) -> None:
    """An `agent.cli` campaign with only `api` workers would wait for ever."""
    info = INFO.model_copy(update={"queues": ["agent.cli", "api"]})
    client.hset(workers_key(), "w@host", json.dumps({"seen": time.time(), "queues": ["api"]}))
    assert unserved_queues(client, info) == Unserved(queues="agent.cli", any_alive=True)
    client.hset(workers_key(), "v@host", json.dumps({"seen": time.time(), "queues": ["agent.cli"]}))
    assert unserved_queues(client, info) is None


def test_the_statistics_are_imported_at_once_for_a_small_campaign_else_near_its_end() -> None:
    assert statistics_due(0, 200, 0.0)  # small: at once, overlapping its few jobs
    assert not statistics_due(0, 3000, 0.0)  # nothing done yet: no rate to judge by
    assert not statistics_due(2000, 3000, 400.0)  # 2.5 s of jobs left
    assert statistics_due(2700, 3000, 400.0)  # under a second left
    assert statistics_due(3000, 3000, 400.0)

"""Leases: one holder at a time, renewed by heartbeats, released only by their holder."""

from __future__ import annotations

import time

import redis

from bridge.keys import inflight_key, lease_key
from worker.lease import Lease


def test_second_holder_is_refused_until_release(client: redis.Redis) -> None:
    first = Lease.acquire(client, "j1", "a", seconds=5)
    assert first is not None
    assert Lease.acquire(client, "j1", "b", seconds=5) is None
    first.release()
    assert Lease.acquire(client, "j1", "b", seconds=5) is not None


def test_heartbeat_keeps_a_lease_alive_past_its_ttl(client: redis.Redis) -> None:
    lease = Lease.acquire(client, "j2", "a", seconds=0.6)
    assert lease is not None
    with lease.heartbeat():
        time.sleep(1.5)
        assert client.get(lease_key("j2")) == lease.token
    lease.release()
    assert client.get(lease_key("j2")) is None
    assert client.zscore(inflight_key(), "j2") is None


def test_expired_lease_cannot_be_renewed_or_released_by_its_old_holder(
    client: redis.Redis,
) -> None:
    old = Lease.acquire(client, "j3", "a", seconds=0.2)
    assert old is not None
    time.sleep(0.4)
    new = Lease.acquire(client, "j3", "b", seconds=5)
    assert new is not None
    assert not old.renew()
    old.release()
    assert client.get(lease_key("j3")) == new.token

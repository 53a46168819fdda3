"""A campaign's manifest: every id once, counted, and packed by Redis at a campaign's size."""

from __future__ import annotations

import hashlib

import redis

from evalrelay.bridge.keys import listed_key, manifest_keys
from evalrelay.bridge.results.manifest import list_jobs, listed_ids, manifest_record


def ids(count: int, start: int = 0) -> list[str]:
    """Job ids as the planner makes them: 32 hex digits of a SHA-256."""
    return [hashlib.sha256(str(i).encode()).hexdigest()[:32] for i in range(start, count)]


def test_a_hundred_thousand_ids_are_listed_once_counted_and_kept_packed(
    client: redis.Redis,
) -> None:
    """Listed in chunks, some twice (a submit stored them again): each id once, the count
    that of the ids, and every hash small enough for Redis to keep it packed."""
    before = int(client.info("memory")["used_memory"])
    for start in range(0, 100_000, 10_000):
        pipe = client.pipeline(transaction=False)
        list_jobs(pipe, "c", ids(start + 10_000, start), 3600)
        list_jobs(pipe, "c", ids(start + 10, start), 3600)  # again: not counted twice
        pipe.execute()
    grown = int(client.info("memory")["used_memory"]) - before
    assert sorted(listed_ids(client, "c")) == sorted(ids(100_000))
    assert client.get(listed_key("c")) == "100000"
    pipe = client.pipeline(transaction=False)
    for key in manifest_keys("c"):
        pipe.object("encoding", key)
    assert set(pipe.execute()) == {"listpack"}
    assert grown / 100_000 < 60, f"{grown / 100_000:.0f} B an id"  # 96 B in one set
    assert 0 < client.ttl(listed_key("c")) <= 3600
    client.delete(*manifest_record("c"))
    assert not list(listed_ids(client, "c")) and client.get(listed_key("c")) is None

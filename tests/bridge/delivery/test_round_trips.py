"""The loop's scripts go together in one pipeline, and survive a Redis that lost them."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
import redis
from redis.client import Pipeline

from evalrelay.bridge.delivery.round_trips import RoundTrips

# KEYS[1]: a counter; no ARGV. Returns the counter's new value.
INCR = "return redis.call('INCR', KEYS[1])"


def test_calls_made_together_each_get_their_reply(client: redis.Redis) -> None:
    async def main() -> list[Any]:
        rounds = RoundTrips(client)
        return await asyncio.gather(*(rounds.run(INCR, ("n",), ()) for _ in range(5)))

    assert sorted(asyncio.run(main())) == [1, 2, 3, 4, 5]


def test_a_script_lost_between_the_check_and_the_call_is_sent_again(
    client: redis.Redis, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A Redis restarted there has no scripts: the call found none, did not run, and ran
    once when sent again (it was left unpublished until the worker stopped)."""
    loaded = Pipeline.load_scripts
    flushed: list[bool] = []

    def load_then_lose(self: Pipeline) -> None:
        loaded(self)
        if not flushed:
            flushed.append(True)
            client.script_flush()

    monkeypatch.setattr(Pipeline, "load_scripts", load_then_lose)

    async def main() -> Any:
        return await RoundTrips(client).run(INCR, ("n",), ())

    assert asyncio.run(main()) == 1
    assert flushed and client.get("n") == "1"

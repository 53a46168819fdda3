"""Redis asked quickly or not at all: an outage makes answers None, and says why."""

from __future__ import annotations

import redis

from evalrelay.bridge.live.redis_link import RedisLink


def test_an_answer_when_redis_answers(redis_url: str, client: redis.Redis) -> None:
    client.set("k", "v")
    link = RedisLink(redis_url)
    assert link.ask(lambda c: c.get("k")) == "v"
    assert link.state().reachable


def test_redis_out_of_reach_is_none_said_and_not_asked_again_at_once() -> None:
    link = RedisLink("redis://127.0.0.1:1/0")
    asked: list[int] = []

    def question(client: redis.Redis) -> object:
        asked.append(1)
        return client.ping()

    assert link.ask(question) is None
    state = link.state()
    assert not state.reachable and state.message and "ConnectionError" in state.message
    assert link.ask(question) is None
    assert len(asked) == 1  # paused: a partition must not hold every request

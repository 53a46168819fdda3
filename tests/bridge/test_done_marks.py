"""The done mark's two readers, Python's and the scripts' Lua, name the same attempt."""

from __future__ import annotations

import pytest
import redis

from evalrelay.bridge.done_marks import (
    COPY_BITS,
    DONE_ATTEMPT_LUA,
    done_mark,
    marked_attempt,
)

MARKS = [
    (done_mark(1, 0), 1),
    (done_mark(1, (1 << COPY_BITS) - 1), 1),
    (done_mark(7, 123456789), 7),
    (done_mark(2_000_000, (1 << COPY_BITS) - 1), 2_000_000),  # still exact as a Lua number
    (1, 1),  # a bare attempt number
    (3, 3),
]


@pytest.mark.parametrize(("mark", "attempt"), MARKS)
def test_python_and_lua_read_the_same_attempt_from_a_mark(
    client: redis.Redis, mark: int, attempt: int
) -> None:
    client.set("mark", mark)
    lua = client.eval(
        DONE_ATTEMPT_LUA + "return done_attempt(redis.call('GET', KEYS[1]))", 1, "mark"
    )
    assert marked_attempt(int(client.get("mark"))) == attempt
    assert lua == attempt


def test_no_mark_is_attempt_zero(client: redis.Redis) -> None:
    assert (
        client.eval(DONE_ATTEMPT_LUA + "return done_attempt(redis.call('GET', KEYS[1]))", 1, "none")
        == 0
    )

"""Redis's clock: the one clock that times written on one host and read on another use.

Hosts' wall clocks drift, and some are set wrong by minutes. A lease's expiry, a message's
sent time or a heartbeat written by one process and compared by another (the reaper, the
CLI, on any host) is therefore taken from Redis, never from `time.time()`: inside the Lua
script that writes it (`NOW_MS_LUA`, Redis's `TIME`; scripts replicate their effects since
Redis 5, so a script may read the clock and then write), or by a reader once per look
(`now_seconds`). Expiries Redis keeps itself (`PX`, `PEXPIRE`) are on its clock already.
A process timing its own waits uses `time.monotonic()`, which no other host reads.
"""

from __future__ import annotations

import redis

# Lua prelude, no KEYS or ARGV of its own: defines `now_ms()`, which returns Redis's
# `TIME` as whole milliseconds since the epoch.
NOW_MS_LUA = """
local function now_ms()
  local t = redis.call('TIME')
  return tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
end
"""
"""A Lua function, `now_ms()`, for a script to start with: Redis's time in milliseconds."""


def now_seconds(client: redis.Redis) -> float:
    """Redis's time, in seconds since the epoch: for a reader comparing stored times."""
    seconds, microseconds = client.time()
    return seconds + microseconds / 1_000_000


def now_ms(client: redis.Redis) -> int:
    """Redis's time, in milliseconds since the epoch."""
    return int(now_seconds(client) * 1000)

"""Who holds each job's message between the queue and its result.

A message on a queue's Redis list is safe: Redis keeps it. Once a worker has taken it,
only that worker knows of it: prefetched, waiting on a countdown, or running. A worker
records each message it takes (`hold`) and forgets it when the task ends (`let_go`);
every worker process keeps an `alive` key with a short TTL. When a process dies, its key
runs out, and the reaper sends its jobs again (`take_from_dead`). A second delivery is
harmless: the job's lease and done mark let only one attempt run and publish.
"""

from __future__ import annotations

import json
import os
import socket
import uuid
from typing import Any, cast

import redis

from evalrelay.bridge.keys import alive_key, holders_key
from evalrelay.bridge.lua_scripts import BEAT, FORGET_GONE, LET_GO, TAKE_HOLD

ALIVE_SECONDS = float(os.environ.get("EVALRELAY_ALIVE_SECONDS", "30"))
"""A worker process is taken for dead this long after its last heartbeat."""

GONE_SECONDS = 120.0
"""A worker or watcher not heard from this long is gone: `status` no longer lists it (its
jobs were sent again long before)."""


def forget_gone(client: redis.Redis, heartbeats_key: str) -> None:
    """Drop from a heartbeat hash (`workers`, `watchers`) the processes that died without
    saying so (SIGKILL): whoever reads or writes the hash next does it. Their `seen` is on
    Redis's clock (`beat`), and so is the comparison: no host's clock is involved."""
    client.eval(FORGET_GONE, 1, heartbeats_key, GONE_SECONDS)


def beat(client: redis.Redis, heartbeats_key: str, name: str, info: dict[str, Any]) -> None:
    """Report a process as alive in a heartbeat hash: `info` (a JSON object) with `seen`,
    the time of this report by Redis's clock, which every reader compares with Redis's
    clock; the processes gone from the hash are dropped in the same round trip."""
    if "seen" in info:
        raise ValueError("`seen` is Redis's time of the report: leave it out of `info`")
    client.eval(BEAT, 1, heartbeats_key, name, json.dumps(info), GONE_SECONDS)


def new_process_name(worker: str) -> str:
    """Unique to one worker process, so a restarted worker of the same name is not its past."""
    return f"{worker}/{socket.gethostname()}/{os.getpid()}/{uuid.uuid4().hex[:8]}"


def keep_alive(client: redis.Redis, process: str) -> None:
    client.set(alive_key(process), "1", px=int(ALIVE_SECONDS * 1000))


def declare_dead(client: redis.Redis, process: str) -> None:
    """A worker stopping on purpose: its messages are sent again at once, not after the TTL."""
    client.delete(alive_key(process))


def hold(client: redis.Redis, job_ids: list[str], message_id: str, process: str) -> None:
    """Record that `process` holds the message carrying these jobs."""
    record = f"{message_id} {process}"
    client.hset(holders_key(), mapping=dict.fromkeys(job_ids, record))


def let_go(client: redis.Redis, job_id: str, message_id: str) -> None:
    client.eval(LET_GO, 1, holders_key(), job_id, message_id)


def messages_held(client: redis.Redis, job_ids: list[str]) -> list[str | None]:
    """The id of the message held for each job, if any."""
    held = cast(list[str | None], client.hmget(holders_key(), job_ids)) if job_ids else []
    return [value.partition(" ")[0] if value else None for value in held]


def take_from_dead(client: redis.Redis) -> list[str]:
    """The jobs whose holding process is dead, each taken off the holders (by one caller)."""
    held = cast(dict[str, str], client.hgetall(holders_key()))
    if not held:
        return []
    processes = sorted({value.partition(" ")[2] for value in held.values()})
    pipe = client.pipeline(transaction=False)
    for process in processes:
        pipe.exists(alive_key(process))
    dead = {p for p, alive in zip(processes, pipe.execute(), strict=True) if not alive}
    return [
        job_id
        for job_id, value in held.items()
        if value.partition(" ")[2] in dead
        and client.eval(TAKE_HOLD, 1, holders_key(), job_id, value)
    ]

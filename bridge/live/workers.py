"""The workers that reported lately, as `evalrelay status` lists them: only reading Redis,
never dropping entries (the workers themselves drop the ones long gone)."""

from __future__ import annotations

from collections.abc import Iterable

import redis
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from evalrelay.bridge.delivery.holders import ALIVE_SECONDS
from evalrelay.bridge.keys import workers_key
from evalrelay.bridge.live.feed import WorkerRow


class Heartbeat(BaseModel):
    """A worker's entry in the workers hash (written by `worker.app`)."""

    model_config = ConfigDict(extra="ignore")

    queues: list[str] = Field(default_factory=list)
    host: str | None = None
    seen: float = 0.0


def live_workers(client: redis.Redis) -> tuple[list[WorkerRow], int]:
    """The workers heard from in the last `ALIVE_SECONDS`, by name, and how many others.

    Ages are on Redis's clock, the one `seen` was written on (`bridge.delivery.holders.beat`),
    read in the same round trip as the workers."""
    pipe = client.pipeline(transaction=False)
    pipe.time()
    pipe.hgetall(workers_key())
    (seconds, microseconds), beats = pipe.execute()
    now = seconds + microseconds / 1_000_000
    live, silent = [], 0
    for name, raw in sorted(beats.items()):
        try:
            beat = Heartbeat.model_validate_json(raw)
        except ValidationError:
            continue
        age = max(0.0, now - beat.seen)
        if age < ALIVE_SECONDS:
            live.append(
                WorkerRow(name=str(name), queues=beat.queues, host=beat.host, seen_seconds_ago=age)
            )
        else:
            silent += 1
    return live, silent


def serving(workers: Iterable[WorkerRow], queues: Iterable[str]) -> list[WorkerRow]:
    """The workers that take jobs from one of `queues`."""
    wanted = set(queues)
    return [w for w in workers if wanted & set(w.queues)]

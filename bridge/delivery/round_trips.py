"""The Redis scripts of the jobs on a worker's event loop, sent together.

Each job there runs two small scripts (taking its lease, publishing its result). Sent one
by one they would cost a round trip each, and a call made on the loop would stop every
other job while it waits. Here the scripts called while a round trip is under way wait
for the next one and go in it together, one pipeline, on a thread of its own: the loop
never waits on Redis, and at hundreds of jobs a second each round trip carries many.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any

import redis
from redis.commands.core import Script
from redis.exceptions import ConnectionError as RedisConnectionError
from redis.exceptions import NoScriptError
from redis.exceptions import TimeoutError as RedisTimeoutError

from evalrelay.bridge.connection import OUTAGE_BACKOFF, OUTAGE_TRIES

NO_SCRIPT_TRIES = 3
"""How often the calls Redis answered "no such script" are sent again: a Redis restarted
between the pipeline's check that its scripts are loaded and the calls has none."""


@dataclass(frozen=True)
class _Call:
    script: Script
    keys: tuple[str, ...]
    args: tuple[str | int, ...]
    reply: asyncio.Future[Any]


class RoundTrips:
    """One per event loop: its scripts' calls, gathered into pipelines."""

    def __init__(self, client: redis.Redis) -> None:
        self.client = client
        self._scripts: dict[str, Script] = {}
        self._waiting: list[_Call] = []
        self._sending = False
        self._sender: asyncio.Task[None] | None = None
        self._thread = ThreadPoolExecutor(1, thread_name_prefix="evalrelay-round-trips")

    async def run(self, script: str, keys: tuple[str, ...], args: tuple[str | int, ...]) -> Any:
        """The script's reply; raises what Redis raised for it (or for the whole trip)."""
        loop = asyncio.get_running_loop()
        if script not in self._scripts:
            self._scripts[script] = self.client.register_script(script)
        call = _Call(self._scripts[script], keys, args, loop.create_future())
        self._waiting.append(call)
        if not self._sending:
            self._sending = True
            self._sender = loop.create_task(self._send())
        return await call.reply

    async def run_through_outage(
        self,
        script: str,
        keys: tuple[str, ...],
        args: tuple[str | int, ...],
        waiting: Callable[[Exception], object],
    ) -> Any:
        """`run`, tried again while Redis is out of reach: `bridge.connection.through_outage`
        on the loop (which sleeps between tries, not waits)."""
        for failures in range(1, OUTAGE_TRIES + 1):
            try:
                return await self.run(script, keys, args)
            except (RedisConnectionError, RedisTimeoutError) as error:
                if failures == OUTAGE_TRIES:
                    raise
                waiting(error)
                await asyncio.sleep(OUTAGE_BACKOFF.compute(failures))
        raise AssertionError("unreachable")

    async def _send(self) -> None:
        loop = asyncio.get_running_loop()
        try:
            while self._waiting:
                calls, self._waiting = self._waiting, []
                try:
                    replies = await loop.run_in_executor(self._thread, self._pipeline, calls)
                except Exception as exc:  # the trip failed (Redis out of reach): each call says so
                    replies = [exc] * len(calls)
                for call, reply in zip(calls, replies, strict=True):
                    if call.reply.done():
                        continue
                    if isinstance(reply, Exception):
                        call.reply.set_exception(reply)
                    else:
                        call.reply.set_result(reply)
        finally:
            self._sending = False

    def _pipeline(self, calls: list[_Call]) -> list[Any]:
        """Each call's reply; a call that found its script gone did not run, and is sent
        again (the pipeline loads its scripts first)."""
        replies = self._execute(calls)
        for _ in range(NO_SCRIPT_TRIES):
            again = [i for i, reply in enumerate(replies) if isinstance(reply, NoScriptError)]
            if not again:
                break
            for i, reply in zip(again, self._execute([calls[i] for i in again]), strict=True):
                replies[i] = reply
        return replies

    def _execute(self, calls: list[_Call]) -> list[Any]:
        pipe = self.client.pipeline(transaction=False)
        for call in calls:
            call.script(keys=list(call.keys), args=list(call.args), client=pipe)
        return list(pipe.execute(raise_on_error=False))

"""Recording the messages a threads-pool worker holds, without a round trip at receipt.

A worker records each job message it takes (`bridge.delivery.holders`), so that the jobs of
a process that dies are sent again. Written at receipt, that record would take a round
trip of its own for each job, a large share of a quick job's time. So a thread-pool
worker notes it in memory: a job that starts within `FLUSH_SECONDS` writes the record
with its lease, in the same round trip (`take`), and a background thread writes the
others, together.

Until it is written, the job is found by the same means as one taken by a worker killed
between Redis handing over the message and the record: it was sent (`outstanding`), is
not held, not running, and so is sent again. Prefork pools run the task in another
process, which cannot take a note made in this one: they record at receipt.
"""

from __future__ import annotations

import logging
import os
import threading
import time
from collections.abc import Mapping
from typing import Any

import redis

from evalrelay.bridge.delivery.holders import keep_alive, new_process_name
from evalrelay.bridge.keys import holders_key

log = logging.getLogger(__name__)

FLUSH_SECONDS = 0.05
"""How long a message may be held without its record: far below the reaper's grace."""


class PendingHolds:
    """The records not yet written of one worker process, by job id."""

    def __init__(self, client: redis.Redis, process: str) -> None:
        self.client = client
        self.process = process
        self._pending: dict[str, str] = {}
        self._writing: dict[str, str] = {}
        """The records a flush is writing now, outside the lock: a Redis out of reach keeps
        a write retrying for seconds, and `take` runs on the event loop, `add` on the
        consumer's thread, neither of which may wait that long."""
        self._lock = threading.Lock()
        self._thread: threading.Thread | None = None

    def add(self, job_id: str, message_id: str) -> None:
        with self._lock:
            self._pending[job_id] = f"{message_id} {self.process}"
            if self._thread is None:
                self._thread = threading.Thread(target=self._run, daemon=True, name="holds")
                self._thread.start()

    def take(self, job_id: str, message_id: str) -> str | None:
        """The record of `message_id`, if not yet written, for the caller to write. One a
        flush is writing now is given too: written twice, it is the same record, and the
        job does not start before its holder is known to Redis."""
        with self._lock:
            for records in (self._pending, self._writing):
                value = records.get(job_id)
                if value is not None and value.partition(" ")[0] == message_id:
                    del records[job_id]
                    return value
            return None

    def put_back(self, job_id: str, value: str) -> None:
        """A record taken and not written (Redis failed): the thread writes it."""
        with self._lock:
            self._pending.setdefault(job_id, value)

    def _run(self) -> None:
        while True:
            time.sleep(FLUSH_SECONDS)
            with self._lock:
                if not self._pending:
                    continue
                self._writing, self._pending = self._pending, {}
                records: Mapping[Any, Any] = dict(self._writing)  # redis-py wants bytes too
            try:
                self.client.hset(holders_key(), mapping=records)
                unwritten: dict[str, str] = {}
            except redis.RedisError as exc:  # kept, and tried again on the next turn
                log.warning("could not record %d held messages: %s", len(records), exc)
                unwritten = self._writing
            with self._lock:
                for job_id, value in unwritten.items():  # those no job took meanwhile
                    self._pending.setdefault(job_id, value)
                self._writing = {}


_holds: dict[tuple[int, str], PendingHolds] = {}
_processes: dict[str, str] = {}
"""This process's unique name for each worker it runs, by worker name (see `holders`)."""
_lock = threading.Lock()


def process_name(client: redis.Redis, worker: str) -> str:
    """The name the worker's held messages are recorded under; alive from its first use."""
    with _lock:
        if worker not in _processes:
            _processes[worker] = new_process_name(worker)
            keep_alive(client, _processes[worker])
        return _processes[worker]


def forget_process(worker: str) -> str | None:
    """The worker's process name, no longer in use (the worker stops)."""
    with _lock:
        return _processes.pop(worker, None)


def note_hold(client: redis.Redis, worker: str, job_id: str, message_id: str) -> None:
    """Note that the worker holds the message, to be written soon or with the job's lease."""
    process = process_name(client, worker)
    key = (os.getpid(), process)
    with _lock:
        if key not in _holds:
            _holds[key] = PendingHolds(client, process)
        holds = _holds[key]
    holds.add(job_id, message_id)


def take_hold(job_id: str, message_id: str) -> tuple[PendingHolds, str] | None:
    """The noted, unwritten record of this message in this process, for its task to write."""
    pid = os.getpid()
    for (owner, _), holds in list(_holds.items()):
        if owner == pid and (value := holds.take(job_id, message_id)) is not None:
            return holds, value
    return None

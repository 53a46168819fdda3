"""The worker's entries in Redis: a worker that died without a word leaves `status`."""

from __future__ import annotations

import json
import os
import signal
import threading
import time

import redis

from evalrelay.bridge.delivery.holders import GONE_SECONDS, forget_gone
from evalrelay.bridge.keys import workers_key


def test_workers_silent_too_long_are_forgotten_and_live_ones_kept(client: redis.Redis) -> None:
    now = time.time()
    client.hset(workers_key(), "killed@test", json.dumps({"seen": now - GONE_SECONDS - 1}))
    client.hset(workers_key(), "alive@test", json.dumps({"seen": now}))
    forget_gone(client, workers_key())
    assert client.hkeys(workers_key()) == ["alive@test"]


def test_a_forked_pool_process_answers_though_a_parent_thread_held_the_client(
    redis_url: str,
) -> None:
    """A parent thread busy with the shared client at the moment of a fork (the reaper,
    the heartbeat) leaves its pool lock taken in the child: the child must not use it."""
    from evalrelay.worker.app import redis_client

    parent = redis_client(redis_url)
    parent.ping()
    taken, forked = threading.Event(), threading.Event()

    def busy() -> None:  # a thread of the parent in mid-command
        with parent.connection_pool._lock:
            taken.set()
            forked.wait(10)

    thread = threading.Thread(target=busy)
    thread.start()
    taken.wait(10)
    pid = os.fork()
    if pid == 0:  # the child: answer within the alarm, else die of it
        signal.alarm(10)
        os._exit(0 if redis_client(redis_url).ping() else 1)
    forked.set()
    thread.join()
    _, status = os.waitpid(pid, 0)
    assert os.waitstatus_to_exitcode(status) == 0

"""Held messages noted in memory: written soon by a thread, or by the job with its lease."""

from __future__ import annotations

import os
import signal
import time

import redis

from evalrelay.bridge.connection import client_for
from evalrelay.bridge.delivery.holders import messages_held
from evalrelay.bridge.delivery.holds import PendingHolds, note_hold, take_hold
from evalrelay.bridge.delivery.lease import Lease
from evalrelay.bridge.keys import done_key, holders_key
from tests.conftest import PrivateRedis, wait_for


def test_a_noted_hold_is_written_soon_when_no_task_takes_it(client: redis.Redis) -> None:
    note_hold(client, "w1@test", "job-a", "msg-a")
    wait_for(lambda: messages_held(client, ["job-a"]) == ["msg-a"], 2, "the hold written")
    assert take_hold("job-a", "msg-a") is None  # written already: nothing left to take


def test_a_task_takes_its_own_note_and_writes_it_with_its_lease(client: redis.Redis) -> None:
    note_hold(client, "w2@test", "job-b", "msg-b")
    assert take_hold("job-b", "another message") is None
    noted = take_hold("job-b", "msg-b")
    assert noted is not None and noted[1].startswith("msg-b ")
    assert take_hold("job-b", "msg-b") is None  # taken once, and never written by the thread
    outcome, lease = Lease.begin(client, "job-b", "w2@test", holder=noted[1])
    assert outcome == "leased" and lease is not None
    assert client.hget(holders_key(), "job-b") == noted[1]


def test_a_job_that_does_not_run_writes_no_hold(client: redis.Redis) -> None:
    client.hset(done_key("c", "job-c"), "job-c", 1)
    outcome, lease = Lease.begin(
        client, "job-c", "w3@test", campaign_id="c", holder="msg-c w3/host/1/x"
    )
    assert outcome == "duplicate" and lease is None
    assert client.hget(holders_key(), "job-c") is None


def test_a_note_put_back_is_written_by_the_thread(client: redis.Redis) -> None:
    note_hold(client, "w4@test", "job-d", "msg-d")
    noted = take_hold("job-d", "msg-d")
    assert noted is not None
    noted[0].put_back("job-d", noted[1])  # its lease could not be taken: Redis failed
    wait_for(lambda: messages_held(client, ["job-d"]) == ["msg-d"], 2, "the hold written")


def test_a_flush_waiting_on_redis_keeps_neither_a_job_nor_a_receipt_waiting(
    private_redis: PrivateRedis,
) -> None:
    """Redis frozen while the thread writes a record: the job of that record takes it at
    once (to write with its lease) and a new message is noted at once, instead of both
    waiting, on the event loop and the consumer's thread, for as long as Redis is away."""
    client = client_for(private_redis.url)
    holds = PendingHolds(client, "w5/host/1/x")
    assert private_redis.process is not None
    os.killpg(private_redis.process.pid, signal.SIGSTOP)
    try:
        holds.add("job-e", "msg-e")
        time.sleep(0.5)  # the thread's write of it is under way, and waits on Redis
        started = time.monotonic()
        taken = holds.take("job-e", "msg-e")
        holds.add("job-f", "msg-f")
        waited = time.monotonic() - started
    finally:
        os.killpg(private_redis.process.pid, signal.SIGCONT)
    assert taken is not None and taken.startswith("msg-e ")
    assert waited < 0.2, f"take and add waited {waited:.1f} s on the write"
    wait_for(lambda: messages_held(client, ["job-f"]) == ["msg-f"], 5, "the next record written")
    assert messages_held(client, ["job-e"]) == ["msg-e"]  # the write under way landed too

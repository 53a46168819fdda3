"""Leases: one holder at a time, renewed by heartbeats, released only by their holder."""

from __future__ import annotations

import signal
import threading
import time
from contextlib import ExitStack

import pytest
import redis

from bridge.keys import inflight_key, lease_key
from tests.clocks import SKEW, SLOW, WITHIN_LEASE, seconds_to_rescue
from tests.conftest import Processes, WriteFiles, one_turn_cases
from worker.lease import Lease


def test_second_holder_is_refused_until_release(client: redis.Redis) -> None:
    first = Lease.acquire(client, "j1", "a", seconds=5)
    assert first is not None
    assert Lease.acquire(client, "j1", "b", seconds=5) is None
    first.release()
    assert Lease.acquire(client, "j1", "b", seconds=5) is not None


def test_heartbeat_keeps_a_lease_alive_past_its_ttl(client: redis.Redis) -> None:
    lease = Lease.acquire(client, "j2", "a", seconds=0.6)
    assert lease is not None
    with lease.heartbeat():
        time.sleep(1.5)
        assert client.get(lease_key("j2")) == lease.token
    lease.release()
    assert client.get(lease_key("j2")) is None
    assert client.zscore(inflight_key(), "j2") is None


def test_expired_lease_cannot_be_renewed_or_released_by_its_old_holder(
    client: redis.Redis,
) -> None:
    old = Lease.acquire(client, "j3", "a", seconds=0.2)
    assert old is not None
    time.sleep(0.4)
    new = Lease.acquire(client, "j3", "b", seconds=5)
    assert new is not None
    assert not old.renew()
    old.release()
    assert client.get(lease_key("j3")) == new.token


def test_one_thread_renews_every_lease_held_in_the_process(client: redis.Redis) -> None:
    leases = [Lease.acquire(client, f"many{i}", "a", seconds=0.6) for i in range(20)]
    with ExitStack() as held:
        for lease in leases:
            assert lease is not None
            held.enter_context(lease.heartbeat())
        time.sleep(1.5)
        assert all(client.get(lease_key(f"many{i}")) for i in range(20))
        assert [t.name for t in threading.enumerate()].count("leases") == 1
    for lease in leases:
        assert lease is not None
        lease.release()


def test_a_lease_taken_away_is_flagged_lost_and_the_others_kept(client: redis.Redis) -> None:
    taken, kept = (Lease.acquire(client, name, "a", seconds=0.6) for name in ("tk", "kp"))
    assert taken is not None and kept is not None
    with taken.heartbeat(), kept.heartbeat():
        client.set(lease_key("tk"), "someone else")
        assert taken.lost.wait(2)
        time.sleep(1.0)
        assert client.get(lease_key("kp")) == kept.token
        assert not kept.lost.is_set()
    kept.release()


def test_a_shorter_lease_added_later_is_renewed_in_time(client: redis.Redis) -> None:
    """The renewing thread sleeps until the first renewal falls due; a lease due sooner
    than that wakes it."""
    slow, quick = Lease.acquire(client, "slow", "a", seconds=30), None
    assert slow is not None
    with slow.heartbeat():
        quick = Lease.acquire(client, "quick", "a", seconds=0.6)
        assert quick is not None
        with quick.heartbeat():
            time.sleep(1.5)
            assert client.get(lease_key("quick")) == quick.token
    quick.release()
    slow.release()


@pytest.mark.parametrize(
    ("victim_clock", "rescuer_clock"),
    [(-SKEW, 0), (0, -SKEW)],
    ids=["cut-worker-behind", "reaper-behind"],
)
def test_cut_worker_loses_its_lease_as_fast_when_a_clock_is_300_s_behind(
    project: WriteFiles,
    processes: Processes,
    client: redis.Redis,
    redis_url: str,
    victim_clock: int,
    rescuer_clock: int,
) -> None:
    """A worker cut off (SIGSTOP) while it runs a job: the job runs again on the other
    worker once the lease runs out, as soon as when both clocks are true, whether the cut
    worker's clock or the other's (the reaper's) is 300 s behind."""
    root = project({"targets.yaml": SLOW, "evals.yaml": one_turn_cases(1)})
    cut = signal.SIGSTOP
    true = seconds_to_rescue(
        processes, client, redis_url, root, victim_clock=0, rescuer_clock=0, cut=cut
    )
    skewed = seconds_to_rescue(
        processes,
        client,
        redis_url,
        root,
        victim_clock=victim_clock,
        rescuer_clock=rescuer_clock,
        cut=cut,
    )
    assert true < WITHIN_LEASE and skewed < WITHIN_LEASE, (true, skewed)
    assert abs(skewed - true) < 2.0, (true, skewed)

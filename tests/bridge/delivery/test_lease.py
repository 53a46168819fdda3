"""Leases: one holder at a time, renewed by heartbeats, released only by their holder."""

from __future__ import annotations

import logging
import multiprocessing
import os
import signal
import subprocess
import sys
import threading
import time
from contextlib import ExitStack

import pytest
import redis

from evalrelay.bridge.clock import now_ms
from evalrelay.bridge.contract.campaign_state import cancel
from evalrelay.bridge.delivery.lease import Lease, LeaseBegin, keep_renewed, renewals
from evalrelay.bridge.delivery.reaper import reap_expired
from evalrelay.bridge.keys import (
    compacted_key,
    done_key,
    holders_key,
    inflight_key,
    lease_key,
    outstanding_key,
)
from evalrelay.bridge.lua_scripts import BEGIN_LEASE
from evalrelay.bridge.queue.steering import pause, unpause
from tests.clocks import LEASE_SECONDS, SKEW, SLOW, WITHIN_LEASE, seconds_to_rescue
from tests.conftest import (
    PrivateRedis,
    Processes,
    WriteFiles,
    one_turn_cases,
    unretried_client,
    wait_for,
)


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
        time.sleep(1.5)  # the point: more than twice the lease's life without a release
        assert client.get(lease_key("j2")) == lease.token
    lease.release()
    assert client.get(lease_key("j2")) is None
    assert client.zscore(inflight_key(), "j2") is None


def test_a_lease_taken_by_the_reaper_cannot_be_renewed_or_released_by_its_old_holder(
    client: redis.Redis,
) -> None:
    old = Lease.acquire(client, "j3", "a", seconds=0.2)
    assert old is not None
    wait_for(lambda: client.get(lease_key("j3")) is None, 5, "the lease to run out")
    time.sleep(0.1)
    assert reap_expired(client, lambda jobs: None) == []  # not stored: nothing to send
    assert client.zscore(inflight_key(), "j3") is None  # but taken off `inflight`
    new = Lease.acquire(client, "j3", "b", seconds=5)
    assert new is not None
    assert not old.renew()
    old.release()
    assert client.get(lease_key("j3")) == new.token


def test_a_lease_run_out_is_its_holders_until_the_reaper_takes_it(client: redis.Redis) -> None:
    """Redis away longer than a lease (its append-only file restores the expiry as a time,
    passed by then): a copy of the job (Celery's transport puts a dropped connection's
    messages back) does not run meanwhile, and the live holder renews the lease."""
    old = Lease.acquire(client, "j4", "a", seconds=0.2)
    assert old is not None
    wait_for(lambda: client.get(lease_key("j4")) is None, 5, "the lease to run out")
    assert Lease.begin(client, "j4", "b") == ("running-elsewhere", None)
    assert old.renew()
    assert client.get(lease_key("j4")) == old.token
    expiry = client.zscore(inflight_key(), "j4")
    assert expiry is not None and expiry > now_ms(client)
    old.release()
    assert Lease.begin(client, "j4", "b")[0] == "leased"


def test_one_thread_renews_every_lease_held_in_the_process(client: redis.Redis) -> None:
    leases = [Lease.acquire(client, f"many{i}", "a", seconds=0.6) for i in range(20)]
    with ExitStack() as held:
        for lease in leases:
            assert lease is not None
            held.enter_context(lease.heartbeat())
        time.sleep(1.5)  # the point: more than twice the leases' life
        assert all(client.get(lease_key(f"many{i}")) for i in range(20))
        assert [t.name for t in threading.enumerate()].count("leases") == 1
    for lease in leases:
        assert lease is not None
        lease.release()


def test_a_lease_taken_away_is_flagged_lost_and_the_others_kept(
    client: redis.Redis, caplog: pytest.LogCaptureFixture
) -> None:
    taken, kept = (Lease.acquire(client, name, "a", seconds=0.6) for name in ("tk", "kp"))
    assert taken is not None and kept is not None
    with (
        caplog.at_level(logging.WARNING, "evalrelay.bridge.delivery.lease"),
        taken.heartbeat(),
        kept.heartbeat(),
    ):
        client.set(lease_key("tk"), "someone else")
        assert taken.lost.wait(2)
        time.sleep(1.0)  # the point: the kept lease outlives its own life after the loss
        assert client.get(lease_key("kp")) == kept.token
        assert not kept.lost.is_set()
    kept.release()
    assert "job tk: lease lost; another worker may take it" in caplog.text


def test_a_shorter_lease_added_later_is_renewed_in_time(client: redis.Redis) -> None:
    """The renewing thread sleeps until the first renewal falls due; a lease due sooner
    than that wakes it."""
    slow, quick = Lease.acquire(client, "slow", "a", seconds=30), None
    assert slow is not None
    with slow.heartbeat():
        quick = Lease.acquire(client, "quick", "a", seconds=0.6)
        assert quick is not None
        with quick.heartbeat():
            time.sleep(1.5)  # the point: twice the quick lease's life, well before 10 s
            assert client.get(lease_key("quick")) == quick.token
    quick.release()
    slow.release()


def test_the_lease_lasts_30_s_unless_the_environment_says_otherwise() -> None:
    def lease_seconds(**env: str) -> str:
        base = {k: v for k, v in os.environ.items() if k != "EVALRELAY_LEASE_SECONDS"}
        argv = [
            sys.executable,
            "-c",
            "from evalrelay.bridge.delivery.lease import LEASE_SECONDS as s; print(s)",
        ]
        done = subprocess.run(argv, env=base | env, capture_output=True, text=True, check=True)
        return done.stdout.strip()

    assert lease_seconds() == "30.0"
    assert lease_seconds(EVALRELAY_LEASE_SECONDS="7.5") == "7.5"


def test_begin_takes_the_lease_until_redis_time_plus_its_life(client: redis.Redis) -> None:
    before = now_ms(client)
    outcome, lease = Lease.begin(client, "b1", "w1", campaign_id="c", seconds=5)
    after = now_ms(client)
    assert outcome == "leased" and lease is not None
    assert lease.token.startswith("w1:") and client.get(lease_key("b1")) == lease.token
    assert 4000 < client.pttl(lease_key("b1")) <= 5000
    expiry = client.zscore(inflight_key(), "b1")
    assert expiry is not None and before + 5000 <= expiry <= after + 5000
    assert client.hget(holders_key(), "b1") is None  # no holder given, none written


def test_a_job_of_a_cancelled_campaign_is_not_leased(client: redis.Redis) -> None:
    cancel(client, "stopped")
    assert Lease.begin(client, "k1", "w1", campaign_id="stopped") == ("cancelled", None)
    assert client.get(lease_key("k1")) is None
    assert client.zscore(inflight_key(), "k1") is None
    assert Lease.begin(client, "k2", "w1", campaign_id="going-on")[0] == "leased"


def test_a_job_of_a_paused_campaign_is_not_leased_and_leaves_the_jobs_sent(
    client: redis.Redis,
) -> None:
    """Skipped and taken off `outstanding` in one step, so `unpause` finds it to send."""
    client.zadd(outstanding_key("api"), {"p1": 1, "p2": 1})
    pause(client, "held", "by hand", "me@here")
    assert Lease.begin(client, "p1", "w1", campaign_id="held", queue="api") == ("paused", None)
    assert client.get(lease_key("p1")) is None
    assert client.zscore(outstanding_key("api"), "p1") is None
    assert client.zscore(outstanding_key("api"), "p2") == 1
    unpause(client, "held", "me@here")
    assert Lease.begin(client, "p1", "w1", campaign_id="held", queue="api")[0] == "leased"


def test_a_published_attempt_is_a_duplicate_and_a_later_attempt_runs(
    client: redis.Redis,
) -> None:
    client.hset(done_key("c", "d1"), "d1", 2)  # attempt 2 published its result
    for attempt in (1, 2):
        assert Lease.begin(client, "d1", "w1", campaign_id="c", attempt=attempt) == (
            "duplicate",
            None,
        )
    client.hset(done_key("c", "d2"), "d2", 1)
    assert Lease.begin(client, "d2", "w1", campaign_id="c")[0] == "duplicate"  # attempt 1
    outcome, lease = Lease.begin(client, "d1", "w1", campaign_id="c", attempt=3)  # a `retry`'s
    assert outcome == "leased" and lease is not None


def test_a_copy_of_a_job_of_a_compacted_campaign_is_a_late_copy_and_not_leased(
    client: redis.Redis,
) -> None:
    """Compaction removed the `done` marks; the campaign's compacted mark fences a late copy
    before its target is called, and takes it off the jobs sent."""
    client.zadd(outstanding_key("api"), {"late": 1})
    client.set(compacted_key("whole"), "{}")
    outcome = Lease.begin(client, "late", "w1", campaign_id="whole", queue="api")
    assert outcome == ("late-copy", None)
    assert client.get(lease_key("late")) is None
    assert client.zscore(inflight_key(), "late") is None
    assert client.zscore(outstanding_key("api"), "late") is None
    assert Lease.begin(client, "late", "w1", campaign_id="other")[0] == "leased"


def test_a_job_leased_by_another_worker_is_running_elsewhere(client: redis.Redis) -> None:
    first = Lease.acquire(client, "e1", "w1", seconds=5)
    assert first is not None
    assert Lease.begin(client, "e1", "w2") == ("running-elsewhere", None)
    assert client.get(lease_key("e1")) == first.token


def test_begin_sent_again_with_its_token_finds_the_lease_its_own(client: redis.Redis) -> None:
    """A BEGIN whose reply was lost with its connection is sent again: the lease it took
    then is its own, not another worker's, and the job runs."""
    begin = LeaseBegin.of("e2", "w1", seconds=5)
    first = client.eval(BEGIN_LEASE, len(begin.keys), *begin.keys, *begin.args)
    again = client.eval(BEGIN_LEASE, len(begin.keys), *begin.keys, *begin.args)
    assert (first, again) == ("leased", "leased")
    assert Lease.begin(client, "e2", "w2") == ("running-elsewhere", None)


def test_begin_waits_for_a_redis_away_longer_than_its_clients_own_retries(
    private_redis: PrivateRedis,
) -> None:
    """Redis is away when a job is to begin: its lease is taken once Redis is back. Given
    up, the job would stay held by its live worker, and nobody would send it again."""
    client = unretried_client(private_redis.url)
    private_redis.stop()
    began: list[object] = []
    beginning = threading.Thread(target=lambda: began.append(Lease.begin(client, "e3", "w1")[0]))
    beginning.start()
    time.sleep(2)
    private_redis.start()
    beginning.join(30)
    assert began == ["leased"]
    assert client.get(lease_key("e3")) is not None


def test_a_renewal_gives_the_lease_its_whole_life_again(client: redis.Redis) -> None:
    lease = Lease.acquire(client, "r1", "w1", seconds=5)
    assert lease is not None
    client.pexpire(lease_key("r1"), 1000)  # as if most of its life had gone by
    before = now_ms(client)
    assert lease.renew() is True
    after = now_ms(client)
    assert 4000 < client.pttl(lease_key("r1")) <= 5000
    expiry = client.zscore(inflight_key(), "r1")
    assert expiry is not None and before + 5000 <= expiry <= after + 5000


def test_heartbeats_come_a_third_of_the_lease_apart(
    client: redis.Redis, monkeypatch: pytest.MonkeyPatch
) -> None:
    lease = Lease.acquire(client, "hb", "w1", seconds=0.6)
    assert lease is not None
    beats: list[float] = []
    renew = lease.renew

    def counted() -> bool:
        beats.append(time.monotonic())
        return renew()

    monkeypatch.setattr(lease, "renew", counted)
    started = time.monotonic()
    with lease.heartbeat():
        wait_for(lambda: len(beats) >= 3, 10, "three heartbeats")
    lease.release()
    gaps = [later - earlier for earlier, later in zip([started, *beats], beats, strict=False)]
    # A busy machine makes them later, never sooner: a third of 0.6 s, less a little jitter.
    assert min(gaps) >= 0.18, gaps


def test_a_heartbeat_redis_refuses_is_logged_and_made_again(
    caplog: pytest.LogCaptureFixture,
) -> None:
    calls: list[float] = []

    def renew() -> bool:
        calls.append(time.monotonic())
        if len(calls) == 1:
            raise redis.ConnectionError("Redis went away for a moment")
        return True

    lost = threading.Event()
    with (
        caplog.at_level(logging.WARNING, "evalrelay.bridge.delivery.lease"),
        keep_renewed(renew, 0.05, "job flaky", lost),
    ):
        wait_for(lambda: len(calls) >= 2, 5, "the next heartbeat")
    assert not lost.is_set()
    assert "job flaky: lease heartbeat failed: Redis went away for a moment" in caplog.text


def test_a_renewal_under_way_while_its_lease_is_released_is_no_loss() -> None:
    """The job ended and released its lease while the thread was renewing it: the renewal
    finds the lease gone, which is no reason to call the lease lost."""
    renewing, released = threading.Event(), threading.Event()

    def renew() -> bool:
        renewing.set()
        released.wait(5)
        return False  # the lease is gone: released, not taken

    lost = threading.Event()
    with keep_renewed(renew, 0.05, "job ending", lost):
        assert renewing.wait(5)
    released.set()
    # One thread renews every lease in turn: the next one renewed, that renewal is over.
    later = threading.Event()

    def renew_later() -> bool:
        later.set()
        return True

    with keep_renewed(renew_later, 0.05, "job later", threading.Event()):
        assert later.wait(5)
    assert not lost.is_set()


def test_renewing_ends_with_the_block() -> None:
    beats: list[float] = []

    def renew() -> bool:
        beats.append(time.monotonic())
        return True

    with keep_renewed(renew, 0.1, "job short", threading.Event()):
        wait_for(lambda: len(beats) >= 1, 5, "a heartbeat")
    after_block = len(beats)
    # Another renewal beating twice, 0.3 s apart, is a sign the one thread had the time to
    # make the ended one's next heartbeat, 0.1 s after its last, had it been kept.
    marks: list[float] = []

    def mark() -> bool:
        marks.append(time.monotonic())
        return True

    with keep_renewed(mark, 0.3, "job marker", threading.Event()):
        wait_for(lambda: len(marks) >= 2, 5, "two heartbeats of the marker")
    assert len(beats) == after_block


def test_a_lost_lease_is_renewed_no_more() -> None:
    tries: list[float] = []

    def renew_lost() -> bool:
        tries.append(time.monotonic())
        return False  # another worker holds it now

    lost = threading.Event()
    with keep_renewed(renew_lost, 0.1, "job taken", lost):
        assert lost.wait(5)
        marks: list[float] = []

        def mark() -> bool:
            marks.append(time.monotonic())
            return True

        # Two beats of another renewal, 0.3 s apart: time for the lost one's next, 0.1 s on.
        with keep_renewed(mark, 0.3, "job marker", threading.Event()):
            wait_for(lambda: len(marks) >= 2, 5, "two heartbeats of the marker")
    assert len(tries) == 1


def test_the_renewing_thread_sleeps_while_nothing_is_due(client: redis.Redis) -> None:
    lease = Lease.acquire(client, "idle", "w1", seconds=30)  # a heartbeat every 10 s
    assert lease is not None
    with lease.heartbeat():
        cpu = time.process_time()
        time.sleep(1.0)  # the point: a second in which nothing falls due
        assert time.process_time() - cpu < 0.2
    lease.release()


def hold_in_a_forked_child(redis_url: str) -> None:
    """Hold a lease past its life in a process forked from one whose renewing thread runs,
    as Celery's pool processes are: exit 0 if it was kept."""
    client = redis.Redis.from_url(redis_url, decode_responses=True)
    lease = Lease.acquire(client, "forked", "child", seconds=0.6)
    assert lease is not None
    with lease.heartbeat():
        time.sleep(1.5)  # the point: more than twice the lease's life
        kept = client.get(lease_key("forked")) == lease.token
    os._exit(0 if kept else 1)


def test_a_forked_process_renews_its_leases_with_a_thread_of_its_own(
    client: redis.Redis, redis_url: str
) -> None:
    parent = Lease.acquire(client, "parent", "w1", seconds=30)
    assert parent is not None
    with parent.heartbeat():
        assert renewals() is renewals()  # one per process
        child = multiprocessing.get_context("fork").Process(
            target=hold_in_a_forked_child, args=(redis_url,)
        )
        child.start()
        child.join(30)
    parent.release()
    assert child.exitcode == 0, "the forked child's lease ran out: nothing renewed it"


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
    # Apart by less than one lease: the slower ways wait out the 20 s liveness window, and
    # where in its lease a worker is cut, and this machine's load, move each by seconds.
    assert abs(skewed - true) < LEASE_SECONDS, (true, skewed)

"""One rate limit for all workers: two worker processes share a target's `rpm` and
`max_concurrency`, and a key set in a worker's environment shows up in no log line."""

from __future__ import annotations

import asyncio
import threading
import time

import pytest
import redis

from evalrelay.bridge.clock import now_ms
from evalrelay.bridge.evalfile.cases import load_eval_file
from evalrelay.bridge.keys import results_stream_key
from evalrelay.bridge.planning.campaigns import plan_jobs
from evalrelay.bridge.queue.celery_queue import JobQueue
from evalrelay.bridge.results.result import Status
from evalrelay.bridge.targets.live_limits import REFRESH_SECONDS
from evalrelay.worker.providers.failures import ProviderFailure
from evalrelay.worker.providers.limits import RateGate
from tests.bridge.cli.test_run import evalrelay
from tests.conftest import Processes, WriteFiles, one_turn_cases, wait_for
from tests.worker.providers.vendor_server import Reply, openai_chat, serving

KEY = "sk-limits-secret-987654321"


def test_two_workers_never_exceed_the_targets_rpm(
    project: WriteFiles, processes: Processes, client: redis.Redis, redis_url: str
) -> None:
    with serving(Reply(openai_chat())) as server:
        root = project(
            {
                "targets.yaml": f"""\
            targets:
              - {{name: limited, provider: openai-compatible, model: m,
                  base_url: "{server.url}/v1", rpm: 120}}
            """,
                "evals.yaml": one_turn_cases(8),
            }
        )
        env = {"OPENAI_API_KEY": KEY}
        for name in ("a@test", "b@test"):
            processes.worker(
                client, name, "--concurrency", "8", "--loglevel", "DEBUG", extra_env=env
            )
        jobs = plan_jobs("rpm", [load_eval_file(root / "evals.yaml")], "limited", None)
        JobQueue.connect(redis_url).send(jobs)
        wait_for(lambda: client.xlen(results_stream_key("rpm")) == 8, 60, "eight results")
    times = sorted(seen.at for seen in server.seen)
    assert len(times) == 8
    # 120 per minute is one request every 0.5 s. What happens between the shared limit and
    # the socket (a client being built, a thread being scheduled) jitters single gaps, so
    # the test counts requests per window, as a vendor does: unlimited, the 16 worker
    # threads would send all 8 within a fraction of a second.
    assert times[-1] - times[0] >= 3.0, times
    assert max(sum(1 for t in times if start <= t < start + 1.0) for start in times) <= 3
    workers = {
        entry["result"].split('"worker":"')[1].split('"')[0]
        for _, entry in client.xrange(results_stream_key("rpm"))
    }
    assert workers == {"a@test", "b@test"}
    for name in ("a@test", "b@test"):
        assert KEY not in processes.log(name)
    assert not any(KEY in entry["result"] for _, entry in client.xrange(results_stream_key("rpm")))


def test_concurrency_cap_is_shared_and_a_dead_holders_slot_expires(client: redis.Redis) -> None:
    gate = RateGate(client, "capped", max_concurrency=2)
    inside = 0
    most = 0
    lock = threading.Lock()

    def call() -> None:
        nonlocal inside, most
        with gate.call(time.monotonic() + 30):
            with lock:
                inside += 1
                most = max(most, inside)
            time.sleep(0.2)
            with lock:
                inside -= 1

    threads = [threading.Thread(target=call) for _ in range(6)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert most == 2
    expired = now_ms(client) - 1000  # slot leases are on Redis's clock, in ms
    client.zadd("evalrelay:limit:capped:slots", {"dead-1": expired, "dead-2": expired})
    started = time.monotonic()
    with gate.call(time.monotonic() + 5):
        pass
    assert time.monotonic() - started < 1


def test_concurrency_slot_wait_past_the_deadline_is_a_timeout(client: redis.Redis) -> None:
    gate = RateGate(client, "full", max_concurrency=1)
    client.zadd("evalrelay:limit:full:slots", {"held": now_ms(client) + 600_000})
    entered = False
    with pytest.raises(ProviderFailure) as caught, gate.call(time.monotonic() + 0.3):
        entered = True
    assert not entered, "got a slot that was taken"
    assert caught.value.status is Status.TIMEOUT
    assert str(caught.value) == (
        "the job's time ran out waiting for the max_concurrency of target full"
    )


def test_a_limit_changed_live_binds_running_workers_and_clear_lifts_it(
    project: WriteFiles, processes: Processes, client: redis.Redis, redis_url: str
) -> None:
    """No restart: the same worker sends freely, then at the rate `evalrelay limit` set."""
    with serving(Reply(openai_chat())) as server:
        root = project(
            {
                "targets.yaml": f"""\
            targets:
              - {{name: live, provider: openai-compatible, model: m,
                  base_url: "{server.url}/v1"}}
            """,
                "evals.yaml": one_turn_cases(4),
            }
        )
        processes.worker(client, "a@test", "--concurrency", "4", extra_env={"OPENAI_API_KEY": KEY})
        queue = JobQueue.connect(redis_url)

        def send(campaign: str) -> list[float]:
            before = len(server.seen)
            queue.send(plan_jobs(campaign, [load_eval_file(root / "evals.yaml")], "live", None))
            wait_for(lambda: client.xlen(results_stream_key(campaign)) == 4, 60, campaign)
            return sorted(seen.at for seen in server.seen[before:])

        free = send("free")
        assert free[-1] - free[0] < 1.5, free
        limited = evalrelay("limit", "live", "--rpm", "60", env=processes.env, cwd=root)
        assert limited.returncode == 0, limited.stderr
        time.sleep(REFRESH_SECONDS)
        held = send("held")
        assert held[-1] - held[0] >= 2.5, held  # one a second: four take three seconds
        status = evalrelay("status", env=processes.env | {"COLUMNS": "200"}, cwd=root)
        assert "limit changes" in status.stdout and "rpm=60" in status.stdout, status.stdout
        cleared = evalrelay("limit", "live", "--clear", env=processes.env, cwd=root)
        assert cleared.returncode == 0, cleared.stderr
        time.sleep(REFRESH_SECONDS)
        again = send("again")
        assert again[-1] - again[0] < 1.5, again


def test_on_an_event_loop_the_cap_holds_and_a_wait_lets_the_loop_run(client: redis.Redis) -> None:
    """`acall`: six calls on one loop, cap two: never more than two inside, and while
    they wait for a slot the loop keeps ticking (no call blocks it)."""
    gate = RateGate(client, "loop-capped", max_concurrency=2)
    inside = most = ticks = 0

    async def call() -> None:
        nonlocal inside, most
        async with gate.acall(time.monotonic() + 30):
            inside += 1
            most = max(most, inside)
            await asyncio.sleep(0.2)
            inside -= 1

    async def tick() -> None:
        nonlocal ticks
        while True:
            ticks += 1
            await asyncio.sleep(0.01)

    async def main() -> float:
        ticking = asyncio.create_task(tick())
        started = time.monotonic()
        await asyncio.gather(*(call() for _ in range(6)))
        ticking.cancel()
        return time.monotonic() - started

    took = asyncio.run(main())
    assert most == 2
    assert took >= 0.55  # three rounds of two
    assert ticks >= took / 0.01 / 2, ticks  # the loop ran its ticks all along
    assert client.zcard("evalrelay:limit:loop-capped:slots") == 0  # every slot given back


def test_on_an_event_loop_a_slot_wait_past_the_deadline_is_a_timeout(client: redis.Redis) -> None:
    gate = RateGate(client, "loop-full", max_concurrency=1)
    client.zadd("evalrelay:limit:loop-full:slots", {"held": now_ms(client) + 600_000})

    async def enter() -> None:
        async with gate.acall(time.monotonic() + 0.3):
            raise AssertionError("got a slot that was taken")

    with pytest.raises(ProviderFailure) as caught:
        asyncio.run(enter())
    assert caught.value.status is Status.TIMEOUT
    assert "max_concurrency of target loop-full" in str(caught.value)


def test_on_an_event_loop_rpm_spaces_the_calls(client: redis.Redis) -> None:
    gate = RateGate(client, "loop-rpm", rpm=120)  # one every half second
    began: list[float] = []

    async def call() -> None:
        async with gate.acall(time.monotonic() + 10):
            began.append(time.monotonic())

    async def main() -> None:
        await asyncio.gather(*(call() for _ in range(3)))

    asyncio.run(main())
    began.sort()
    assert began[1] - began[0] >= 0.45 and began[2] - began[1] >= 0.45, began

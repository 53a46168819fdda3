"""Workers SIGKILLed again and again while they take short jobs: none is lost or doubled.

A kill can land anywhere: between Redis handing a message over and the worker recording
it, between Celery noting it as unacknowledged and the worker recording it, while it runs,
while it publishes. Every job must still end with exactly one line, and no message may be
left behind in the broker's `unacked` hash.
"""

from __future__ import annotations

import os
import random
import signal
import time

import redis

from evalrelay.bridge.queue.campaigns import progress
from tests.conftest import FAST_RECOVERY, Processes, WriteFiles, one_turn_cases, wait_for
from tests.worker.test_tasks import collect_all, submit_campaign

KILLS = int(os.environ.get("KILL_TEST_KILLS", "10"))
JOBS = int(os.environ.get("KILL_TEST_JOBS", "400"))


def test_workers_killed_at_random_moments_lose_and_double_nothing(
    project: WriteFiles, processes: Processes, client: redis.Redis, redis_url: str
) -> None:
    targets = "targets:\n  - {name: quick, provider: mock, latency_ms: 50}\n"
    root = project({"targets.yaml": targets, "evals.yaml": one_turn_cases(JOBS)})
    rng = random.Random(int(os.environ.get("KILL_TEST_SEED", "3")))
    workers = {
        name: processes.worker(client, name, "-c", "4", extra_env=FAST_RECOVERY)
        for name in ("w1@test", "w2@test")
    }
    info = submit_campaign(redis_url, root, JOBS, target="quick")
    for _ in range(KILLS):
        time.sleep(rng.uniform(0.05, 0.8))
        name = rng.choice(sorted(workers))
        os.killpg(workers[name].pid, signal.SIGKILL)
        workers[name].wait()
        workers[name] = processes.worker(client, name, "-c", "4", extra_env=FAST_RECOVERY)
        if progress(client, info.campaign_id).finished:
            break
    lines = collect_all(processes, client, info, 180)
    assert len(lines) == JOBS
    wait_for(lambda: client.hlen("unacked") == 0, 30, "the broker's unacked hash to empty")

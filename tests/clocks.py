"""Real processes whose wall clock is minutes off, and how long a cut worker's job takes
to run again on another worker.

A process's clock is shifted with libfaketime (Debian's `faketime` package) preloaded into
it: its `time.time()` and every other wall-clock read are off by the given seconds; its
monotonic clock is left true. Redis, started apart, keeps the true time. A process with a
true clock is started the same way, shifted by 0 s, to compare like with like.
"""

from __future__ import annotations

import glob
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
import redis

from evalrelay.bridge.delivery.reaper import OUTAGE_MARGIN_SECONDS
from evalrelay.bridge.results.manifest import listed_ids
from tests.conftest import Processes, wait_for
from tests.worker.test_tasks import holder, submit_campaign

SKEW = 300
"""How far off the skewed clocks are, in seconds."""

RECOVERY = {
    "EVALRELAY_ALIVE_SECONDS": "20",
    "EVALRELAY_LEASE_SECONDS": "3",
    "EVALRELAY_REAP_SECONDS": "0.5",
}
"""Short leases, and dead workers' holds far longer: a job is sent again within the lease
only by the lease's expiry; any other way (the holder found dead, the job found lost)
takes `EVALRELAY_ALIVE_SECONDS`."""

LEASE_SECONDS = float(RECOVERY["EVALRELAY_LEASE_SECONDS"])
WITHIN_LEASE = LEASE_SECONDS + 3.0
"""A lease runs out at most `LEASE_SECONDS` after the cut; then a reaper's turn (0.5 s) and
the rescuer's taking of the message."""

REAPER_GRACE_SECONDS = float(RECOVERY["EVALRELAY_ALIVE_SECONDS"]) + OUTAGE_MARGIN_SECONDS
"""A reaper of these workers judges nothing until Redis has been up this long, as after
a restart (`bridge.delivery.reaper.Outages`)."""

SLOW = "targets:\n  - {name: slow, provider: mock, latency_ms: 120000}\n"
"""A job that runs far longer than any test waits for it."""


SLEEP_FIX = Path(__file__).parent / "skewed_clock"
"""A `sitecustomize` that lets Python sleep under libfaketime (see its docstring)."""


def skewed_clock(seconds: int) -> dict[str, str]:
    """The environment that sets a process's wall clock `seconds` off (libfaketime)."""
    found = glob.glob("/usr/lib/*/faketime/libfaketimeMT.so.1")
    if not found:
        pytest.fail("skewed-clock tests need libfaketime: apt-get install faketime")
    paths = [str(SLEEP_FIX), *filter(None, [os.environ.get("PYTHONPATH")])]
    return {
        "LD_PRELOAD": found[0],
        "FAKETIME": f"{seconds:+d}",
        "FAKETIME_DONT_FAKE_MONOTONIC": "1",
        "PYTHONPATH": os.pathsep.join(paths),
    }


def clock_offset(env: dict[str, str]) -> float:
    """How far off `time.time()` is in a Python process started with `env`."""
    read = "import time; print(time.time())"
    shown = subprocess.run(
        [sys.executable, "-c", read], env={**os.environ, **env}, capture_output=True, text=True
    )
    return float(shown.stdout) - time.time()


def seconds_to_rescue(
    processes: Processes,
    client: redis.Redis,
    redis_url: str,
    root: Path,
    *,
    victim_clock: int,
    rescuer_clock: int,
    cut: signal.Signals,
) -> float:
    """Seconds from cutting a worker (SIGSTOP) or killing it (SIGKILL) while it runs a job
    to that job running on a second worker, the only other one (and so the reaper). Each
    worker's clock is off by the seconds given; Redis starts empty and ends so."""
    client.flushdb()
    # The test's Redis may have just started (each pytest worker starts its own): the
    # rescue would then wait for a reaper's grace after a restart, which is not this.
    wait_for(
        lambda: float(client.info("server")["uptime_in_seconds"]) >= REAPER_GRACE_SECONDS,
        REAPER_GRACE_SECONDS + 5,
        "Redis to be up for longer than a reaper's grace",
    )
    for clock in (victim_clock, rescuer_clock):
        assert abs(clock_offset(skewed_clock(clock)) - clock) < 2, "libfaketime does not work"
    victim = processes.worker(
        client, "victim@test", "-c", "1", extra_env=RECOVERY | skewed_clock(victim_clock)
    )
    info = submit_campaign(redis_url, root, 1, target="slow")
    (job_id,) = listed_ids(client, info.campaign_id)
    wait_for(lambda: holder(client, job_id) == "victim@test", 30, "the victim to run the job")
    rescuer = processes.worker(
        client, "rescuer@test", "-c", "1", extra_env=RECOVERY | skewed_clock(rescuer_clock)
    )
    os.killpg(victim.pid, cut)
    cut_at = time.monotonic()
    wait_for(lambda: holder(client, job_id) == "rescuer@test", 120, "the job on the rescuer")
    seconds = time.monotonic() - cut_at
    for process in (victim, rescuer):
        os.killpg(process.pid, signal.SIGKILL)
        process.wait(10)
    client.flushdb()
    return seconds

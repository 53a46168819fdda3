"""Cold start: `evalrelay run` of one mock case on the embedded default, start to exit,
next to the least a user could write for the same, in the same run.

    python bench/cold_start.py [--runs 5]

The baseline starts its own `redis-server` on a free loopback port, a bare Celery worker
(threads pool) in its own process, sends one no-op task, waits for it and stops both: what the
embedded default does, without evalrelay. Each figure is the median of `--runs`.
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

BASELINE = """\
import os, socket, subprocess, sys, time
import redis
with socket.socket() as probe:
    probe.bind(("127.0.0.1", 0))
    port = probe.getsockname()[1]
server = subprocess.Popen(["redis-server", "--port", str(port), "--bind", "127.0.0.1",
                           "--save", "", "--appendonly", "no"], stdout=subprocess.DEVNULL)
client = redis.Redis(port=port)
while True:
    try:
        client.ping(); break
    except redis.ConnectionError:
        time.sleep(0.01)
env = {**os.environ, "EVALRELAY_REDIS_URL": f"redis://127.0.0.1:{port}/0"}
worker = subprocess.Popen([sys.executable, "-m", "celery", "-A", "bench.noop_app", "worker",
                           "--pool", "threads", "-c", "2", "--without-mingle",
                           "--without-gossip", "--without-heartbeat", "-l", "WARNING"],
                          env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
os.environ.update(env)
from bench.noop_app import noop
noop.delay()
while int(client.get("bench:noop:done") or 0) < 1:
    time.sleep(0.01)
worker.terminate(); worker.wait()
server.terminate(); server.wait()
"""


def timed(argv: list[str], cwd: Path, runs: int) -> float:
    times = []
    for _ in range(runs):
        began = time.perf_counter()
        subprocess.run(argv, cwd=cwd, check=True, capture_output=True)
        times.append(time.perf_counter() - began)
    return statistics.median(times)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--runs", type=int, default=5)
    runs = parser.parse_args().runs
    with tempfile.TemporaryDirectory() as folder:
        project = Path(folder)
        (project / ".git").mkdir()
        (project / "one.yaml").write_text(
            "evalcases:\n  - {id: a, input_messages: [{role: user, content: hi}]}\n"
        )
        baseline = timed([sys.executable, "-c", BASELINE], ROOT, runs)
        ours = timed(
            [sys.executable, "-m", "bridge.cli.main", "run", "one.yaml", "--target", "mock"],
            project,
            runs,
        )
    print(f"bare Celery, own Redis, one no-op task: {baseline:.2f} s (median of {runs})")
    print(f"evalrelay run, one mock case, embedded: {ours:.2f} s (median of {runs})")
    print(f"ratio evalrelay / bare: {ours / baseline:.2f}   goal: evalrelay < 1.2 s")


if __name__ == "__main__":
    main()

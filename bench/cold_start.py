"""`evalrelay run` on the embedded default, start to exit, as a user meets it: one mock
case (cold start) and a file of `--cases` one-turn mock cases, each next to the least a
user could write for the same, in the same run.

    python bench/cold_start.py [--runs 5] [--cases 2000]

The baseline starts its own `redis-server` on a free loopback port, a bare Celery worker
(threads pool) in its own process, sends as many no-op tasks, waits for them and stops both:
what the embedded default does, without evalrelay. Each figure is the median of `--runs`;
beside each time, the CPU seconds it took (of the command and of the processes it waited
for), which a loaded machine changes far less than the time.
"""

from __future__ import annotations

import argparse
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import NamedTuple

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from tests.conftest import one_turn_cases  # noqa: E402

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
                           "--pool", "threads", "-c", "8", "--without-mingle",
                           "--without-gossip", "--without-heartbeat", "-l", "WARNING"],
                          env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
os.environ.update(env)
from bench.noop_app import noop
count = int(sys.argv[1])
noop.delay()  # the worker is up once it has done this one: time the others alone
while int(client.get("bench:noop:done") or 0) < 1:
    time.sleep(0.01)
began = time.perf_counter()
with noop.app.producer_or_acquire() as producer:
    for _ in range(count - 1):
        noop.apply_async(producer=producer)
while int(client.get("bench:noop:done") or 0) < count:
    time.sleep(0.01)
print(time.perf_counter() - began)
worker.terminate(); worker.wait()
server.terminate(); server.wait()
"""


class Timed(NamedTuple):
    seconds: float
    """From start to exit: the median of the runs."""
    cpu: float
    """CPU seconds of the command and the processes it waited for (its forked worker; not
    the Redis it leaves to stop by itself), the median: what load on the machine changes
    least."""
    stdout: str


def timed(argv: list[str], cwd: Path, runs: int, env: dict[str, str]) -> Timed:
    """The median time from start to exit, its CPU time, and the output of the median run."""
    runs_done = []
    cpus = []
    for run in range(runs):
        # A new user's home each time: the embedded Redis starts empty, not with the
        # campaigns of the runs before (its append-only file is read at every start).
        home = {"EVALRELAY_HOME": str(cwd / f"home-{time.time_ns()}-{run}")}
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        began = time.perf_counter()
        done = subprocess.run(
            argv, cwd=cwd, check=True, capture_output=True, text=True, env=env | home
        )
        runs_done.append((time.perf_counter() - began, done.stdout))
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        cpus.append(after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime)
    seconds, stdout = sorted(runs_done)[len(runs_done) // 2]
    return Timed(seconds, sorted(cpus)[len(cpus) // 2], stdout)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--cases", type=int, default=2000)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as folder:
        project = Path(folder)
        env = {k: v for k, v in os.environ.items() if k != "EVALRELAY_REDIS_URL"}
        (project / ".git").mkdir()
        (project / "one.yaml").write_text(one_turn_cases(1))
        (project / "many.yaml").write_text(one_turn_cases(args.cases))
        for count, name in ((1, "one.yaml"), (args.cases, "many.yaml")):
            bare = timed([sys.executable, "-c", BASELINE, str(count)], ROOT, args.runs, env)
            baseline, tasks_alone = bare.seconds, bare.stdout
            run = timed(
                [sys.executable, "-m", "evalrelay", "run", name, "--target", "mock"],
                project,
                args.runs,
                env,
            )
            ours = run.seconds
            print(f"{count} case(s), median of {args.runs}:")
            print(
                f"  bare Celery, own Redis, {count} no-op task(s): {baseline:.2f} s start to "
                f"exit ({bare.cpu:.2f} s CPU), {float(tasks_alone):.2f} s of it from the "
                "first push to the last task"
            )
            print(f"  evalrelay run, embedded, start to exit: {ours:.2f} s ({run.cpu:.2f} s CPU)")
            if count == 1:
                print(f"  bare / evalrelay: {baseline / ours:.2f}   goal: evalrelay <= 1.0 s")
            else:
                print(
                    f"  bare start to exit (its worker's start included) / evalrelay: "
                    f"{baseline / ours:.2f}   goal: >= 0.9"
                )
                print(
                    f"  bare first push to last task / evalrelay: {float(tasks_alone) / ours:.2f}"
                )


if __name__ == "__main__":
    main()

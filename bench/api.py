"""One `api` worker against a loopback OpenAI-compatible server that answers after a
fixed delay, next to what a user would otherwise write, in one run: a bare
`openai.AsyncOpenAI` loop holding the same number of requests open (a semaphore) and
sending the same request bodies (`evalrelay render --json`'s wire body, the system prompt
evalrelay adds included: the SDK's own CPU per call grows with the messages).

    python bench/api.py [--delay 0.2] [--cases 400] [--concurrency 8 32 128]
                        [--processes 1 0] [--workers 1 2] [--user 3000]

`--processes 2` measures `evalrelay worker --processes 2`: one worker of two processes,
each with its event loop and half the concurrency (the ceiling is the same); 0 measures
the worker's default (one process per 64 jobs at once, at most one per core). With
`--workers 2`, two workers each hold `concurrency` requests open, against the same peer:
twice its rate is the ceiling of two workers.

The server (`bench/slow_openai.py`) runs on an asyncio loop in its own process, so it is
not what is measured. The ceiling is concurrency / delay.

`--user N` also measures what a user meets: one `evalrelay worker -c 128` (its processes
as by default) already running, and `evalrelay run` of N cases against the same server,
from the moment the campaign's jobs were recorded as sent (Redis's clock) to the moment
the last result line is in the results file, beside the bare loop's N calls at
concurrency 128.

Each line also gives the CPU time per call of the worker processes and of the bare loop's
process: at high concurrency both are bound by one core, and on a loaded machine that
figure moves far less than the rates do.
"""

from __future__ import annotations

import argparse
import asyncio
import itertools
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import psutil
import redis

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench.pipeline import URL, evalrelay_worker, stop, wait, worker_processes  # noqa: E402
from evalrelay.bridge.cli.render import case_view  # noqa: E402
from evalrelay.bridge.evalfile.cases import load_eval_file  # noqa: E402
from evalrelay.bridge.keys import outstanding_key, results_stream_key  # noqa: E402
from evalrelay.bridge.planning.campaigns import plan_jobs  # noqa: E402
from evalrelay.bridge.queue.celery_queue import JobQueue  # noqa: E402
from tests.conftest import free_port, one_turn_cases  # noqa: E402


def measure(
    client: redis.Redis,
    folder: Path,
    url: str,
    cases: int,
    concurrency: int,
    env: dict[str, str],
    workers_count: int = 1,
    processes: int = 1,
) -> tuple[float, float]:
    """Calls per second, and the workers' CPU seconds per call. `processes` 0: as many as a
    worker of this concurrency has by default."""
    client.flushdb()
    (folder / "targets.yaml").write_text(slow_target(url))
    workers = [
        evalrelay_worker(client, concurrency, env, f"bench{n}@host", processes)
        for n in range(workers_count)
    ]
    try:
        warm_up(client, folder, workers_count * worker_processes(concurrency, processes))
        campaign = f"api-{concurrency}"
        jobs = plan_jobs(campaign, [load_eval_file(folder / "bench.yaml")], "slow", None)
        cpu_before = sum(cpu_seconds(w.pid) for w in workers)
        started = time.monotonic()
        JobQueue.connect(URL).send(jobs)
        wait(lambda: client.xlen(results_stream_key(campaign)) >= cases, 900)
        rate = cases / (time.monotonic() - started)
        return rate, (sum(cpu_seconds(w.pid) for w in workers) - cpu_before) / cases
    finally:
        for worker in workers:
            stop(worker)


def warm_up(client: redis.Redis, folder: Path, processes: int) -> None:
    """Jobs sent one at a time until each worker process has run some: a worker already
    running, as the bare loop is (a worker's first calls import the SDK)."""
    jobs = plan_jobs("warm-up", [load_eval_file(folder / "bench.yaml")], "slow", None)
    queue = JobQueue.connect(URL)
    ran: set[str] = set()
    for sent, job in enumerate(jobs, start=1):
        queue.send([job])
        wait(lambda n=sent: client.xlen(results_stream_key("warm-up")) >= n, 120)
        ran = {
            json.loads(f["result"])["worker"]
            for _, f in client.xrange(results_stream_key("warm-up"))
        }
        if len(ran) == processes and sent >= 4 * processes:
            return
    raise SystemExit(f"only {len(ran)} of {processes} worker processes ran a warm-up job")


USER_CONCURRENCY = 128

API_KEY = "sk-bench-" + "0123456789abcdef" * 2
"""A key shaped like a real one. The worker masks its value wherever it appears in a
result; a short word like "bench" appeared in every result (the worker's name, bench0@host),
which sent each one down masking's slow path, as no real key would."""


def user_run(
    client: redis.Redis,
    folder: Path,
    url: str,
    cases: int,
    env: dict[str, str],
) -> tuple[float, float]:
    """`evalrelay run` of `cases` calls with a worker (`evalrelay worker -c 128`, its
    processes as by default) already running: calls per second from the first send to the
    last line written, and the command's start to exit in seconds."""
    client.flushdb()
    project = Path(tempfile.mkdtemp(prefix="user-", dir=folder))  # its own results folder
    (project / "evalrelay.yaml").write_text("")
    (project / "targets.yaml").write_text((folder / "targets.yaml").read_text())
    (project / "user.yaml").write_text(one_turn_cases(cases))
    worker = evalrelay_worker(client, USER_CONCURRENCY, env, "user@host", processes=0)
    try:
        warm_up(client, folder, worker_processes(USER_CONCURRENCY, 0))
        started = time.time()
        run = subprocess.Popen(
            [sys.executable, "-m", "evalrelay", "run", "user.yaml", "--target", "slow",
             "--out", str(project / "results")],
            cwd=project, env=env, stdout=subprocess.DEVNULL,
            stderr=(project / "run.log").open("wb"),
        )  # fmt: skip
        first_sent: float | None = None
        last_line: float | None = None
        lines = NewLines()
        while run.poll() is None or last_line is None:
            if first_sent is None:
                oldest = client.zrange(outstanding_key("api"), 0, 0, withscores=True)
                first_sent = float(oldest[0][1]) / 1000 if oldest else None
            if lines.path is None:
                lines.path = next((project / "results").glob("*.jsonl"), None)
            if last_line is None and lines.count() >= cases:
                last_line = time.time()
            if run.poll() is not None and last_line is None:
                raise SystemExit(f"evalrelay run ended early: {(project / 'run.log').read_text()}")
            time.sleep(0.005)
        exited = time.time() - started
        assert first_sent is not None, "no job was seen recorded as sent"
        return cases / (last_line - first_sent), exited
    finally:
        stop(worker)


class NewLines:
    """The lines of a growing file, counted by reading only what was added since the last
    look: reading the whole file every few milliseconds took CPU from the worker measured."""

    def __init__(self) -> None:
        self.path: Path | None = None
        self._read = 0
        self._lines = 0

    def count(self) -> int:
        if self.path is None:
            return 0
        with self.path.open("rb") as file:
            file.seek(self._read)
            added = file.read()
        self._read += len(added)
        self._lines += added.count(b"\n")
        return self._lines


def slow_target(url: str) -> str:
    """The targets file naming the loopback server as target `slow`."""
    return (
        f"targets:\n  - {{name: slow, provider: openai-compatible, model: m, "
        f"base_url: '{url}/v1'}}\n"
    )


def cpu_seconds(pid: int) -> float:
    """Of the process and its children (a worker's processes, its prefork pool)."""
    process = psutil.Process(pid)
    tree = [process, *process.children(recursive=True)]
    return sum(float(p.cpu_times().user + p.cpu_times().system) for p in tree)


def wire_bodies(file: Path, target: str) -> list[dict[str, Any]]:
    """What the worker sends for each case of `file` (`evalrelay render --json`'s wire
    body): the peer sends the same, the system prompt evalrelay adds included."""
    loaded = load_eval_file(file)
    return [case_view(loaded, case, target)["wire"] for case in loaded.cases]


async def bare_async_openai(
    url: str, bodies: list[dict[str, Any]], concurrency: int
) -> tuple[float, float]:
    """The peer: one event loop, `concurrency` requests open at a time, each sending its
    body. Calls per second, and its CPU seconds per call."""
    import openai

    client = openai.AsyncOpenAI(base_url=f"{url}/v1", api_key=API_KEY, max_retries=0)
    gate = asyncio.Semaphore(concurrency)

    async def one(body: dict[str, Any]) -> None:
        async with gate:
            await client.chat.completions.create(**body)

    started, cpu = time.monotonic(), time.process_time()
    await asyncio.gather(*(one(body) for body in bodies))
    rate = len(bodies) / (time.monotonic() - started)
    per_call = (time.process_time() - cpu) / len(bodies)
    await client.close()
    return rate, per_call


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--delay", type=float, default=0.2)
    parser.add_argument("--cases", type=int, default=400)
    parser.add_argument("--concurrency", type=int, nargs="+", default=[8, 32, 128])
    parser.add_argument("--workers", type=int, nargs="+", default=[1])
    parser.add_argument(
        "--processes", type=int, nargs="+", default=[1, 0],
        help="`evalrelay worker --processes` of each worker, 0 for its default (the user's "
        "row: the default).",
    )  # fmt: skip
    parser.add_argument(
        "--user", type=int, default=0, metavar="N",
        help="Also time `evalrelay run` of N cases with a worker (concurrency 128) running.",
    )  # fmt: skip
    args = parser.parse_args()
    env = {
        **os.environ,
        "EVALRELAY_REDIS_URL": URL,
        "PYTHONPATH": str(ROOT),
        "OPENAI_API_KEY": API_KEY,
    }
    client = redis.Redis.from_url(URL, decode_responses=True)
    port = free_port()
    server = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "bench.slow_openai",
            "--port",
            str(port),
            "--delay",
            str(args.delay),
        ],
        cwd=ROOT,
    )
    url = f"http://127.0.0.1:{port}"
    try:
        time.sleep(1.0)
        with tempfile.TemporaryDirectory() as name:
            folder = Path(name)
            (folder / "evalrelay.yaml").write_text("")
            (folder / "bench.yaml").write_text(one_turn_cases(args.cases))
            (folder / "targets.yaml").write_text(slow_target(url))
            bodies = wire_bodies(folder / "bench.yaml", "slow")
            for concurrency in args.concurrency:
                peer, peer_cpu = asyncio.run(bare_async_openai(url, bodies, concurrency))
                for workers, processes in itertools.product(args.workers, args.processes):
                    rate, cpu = measure(
                        client, folder, url, args.cases, concurrency, env, workers, processes
                    )
                    ceiling = workers * concurrency / args.delay
                    count = worker_processes(concurrency, processes)
                    print(
                        f"concurrency {concurrency:>4} x {workers} worker(s) of {count} "
                        f"process(es){'' if processes else ' (default)'}: evalrelay "
                        f"{rate:6.1f}/s, bare AsyncOpenAI {peer:6.1f}/s, ceiling "
                        f"{ceiling:6.1f}/s; ratio to the peer {rate / peer:.2f}, to the "
                        f"ceiling {rate / ceiling:.2f}; CPU per call {cpu * 1000:.2f} ms vs "
                        f"{peer_cpu * 1000:.2f} ms (peer / evalrelay {peer_cpu / cpu:.2f})",
                        flush=True,
                    )
            if args.user:
                (folder / "user.yaml").write_text(one_turn_cases(args.user))
                user_bodies = wire_bodies(folder / "user.yaml", "slow")
                peer, _ = asyncio.run(bare_async_openai(url, user_bodies, USER_CONCURRENCY))
                rate, exited = user_run(client, folder, url, args.user, env)
                processes = worker_processes(USER_CONCURRENCY, 0)
                print(
                    f"evalrelay run of {args.user} cases, a worker of concurrency "
                    f"{USER_CONCURRENCY} running ({processes} process(es), its default here): "
                    f"{rate:6.1f}/s from the first send to the last line ({exited:.1f} s from "
                    f"the command's start to its exit), bare AsyncOpenAI {peer:6.1f}/s; ratio "
                    f"{rate / peer:.2f}",
                    flush=True,
                )
    finally:
        server.terminate()
        server.wait()
        client.flushdb()


if __name__ == "__main__":
    main()

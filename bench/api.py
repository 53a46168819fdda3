"""One `api` worker process against a loopback OpenAI-compatible server that answers after a
fixed delay, next to what a user would otherwise write, in one run: a bare
`openai.AsyncOpenAI` loop holding the same number of requests open (a semaphore).

    python bench/api.py [--delay 0.2] [--cases 400] [--concurrency 8 32 128] [--workers 1 2]
                        [--user 3000]

With `--workers 2`, two worker processes each hold `concurrency` requests open, against
the same peer: twice its rate is the ceiling of two processes.

The server (`bench/slow_openai.py`) runs on an asyncio loop in its own process, so it is
not what is measured. The ceiling is concurrency / delay.

`--user N` also measures what a user meets: one `evalrelay worker` (concurrency 128)
already running, and `evalrelay run` of N cases against the same server, from the moment
the campaign's jobs were recorded as sent (Redis's clock) to the moment the last result
line is in the results file, beside the bare loop's N calls at concurrency 128.

Each line also gives the CPU time per call of the worker processes and of the bare loop's
process: at high concurrency both are bound by one core, and on a loaded machine that
figure moves far less than the rates do.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import psutil
import redis

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench.pipeline import URL, evalrelay_worker, stop, wait  # noqa: E402
from bridge.evalfile.cases import load_eval_file  # noqa: E402
from bridge.keys import outstanding_key, results_stream_key  # noqa: E402
from bridge.queue.campaigns import plan_jobs  # noqa: E402
from bridge.queue.celery_queue import JobQueue  # noqa: E402
from tests.conftest import free_port, one_turn_cases  # noqa: E402


def measure(
    client: redis.Redis,
    folder: Path,
    url: str,
    cases: int,
    concurrency: int,
    env: dict[str, str],
    processes: int = 1,
) -> tuple[float, float]:
    """Calls per second, and the workers' CPU seconds per call."""
    client.flushdb()
    (folder / "targets.yaml").write_text(slow_target(url))
    workers = [
        evalrelay_worker(client, concurrency, env, f"bench{n}@host") for n in range(processes)
    ]
    try:
        # A worker already running, as the bare loop is: its first calls import the SDK.
        warm = plan_jobs("warm-up", [load_eval_file(folder / "bench.yaml")], "slow", None)
        JobQueue.connect(URL).send(warm[: 4 * processes])
        wait(lambda: client.xlen(results_stream_key("warm-up")) >= 4 * processes, 120)
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


USER_CONCURRENCY = 128

API_KEY = "sk-bench-" + "0123456789abcdef" * 2
"""A key shaped like a real one. The worker masks its value wherever it appears in a
result; a short word like "bench" appeared in every result (the worker's name, bench0@host),
which sent each one down masking's slow path, as no real key would."""


def user_run(
    client: redis.Redis, folder: Path, url: str, cases: int, env: dict[str, str]
) -> tuple[float, float]:
    """`evalrelay run` of `cases` calls with a worker already running: calls per second from
    the first send to the last line written, and the command's start to exit in seconds."""
    client.flushdb()
    project = folder / "user"
    project.mkdir(exist_ok=True)
    (project / "evalrelay.yaml").write_text("")
    (project / "targets.yaml").write_text((folder / "targets.yaml").read_text())
    (project / "user.yaml").write_text(one_turn_cases(cases))
    worker = evalrelay_worker(client, USER_CONCURRENCY, env, "user@host")
    try:
        started = time.time()
        run = subprocess.Popen(
            [sys.executable, "-m", "bridge.cli.main", "run", "user.yaml", "--target", "slow",
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
    times = psutil.Process(pid).cpu_times()
    return float(times.user + times.system)


async def bare_async_openai(url: str, cases: int, concurrency: int) -> tuple[float, float]:
    """The peer: one event loop, `concurrency` requests open at a time. Calls per second,
    and its CPU seconds per call."""
    import openai

    client = openai.AsyncOpenAI(base_url=f"{url}/v1", api_key=API_KEY, max_retries=0)
    gate = asyncio.Semaphore(concurrency)

    async def one(i: int) -> None:
        async with gate:
            await client.chat.completions.create(
                model="m", messages=[{"role": "user", "content": f"q{i}"}]
            )

    started, cpu = time.monotonic(), time.process_time()
    await asyncio.gather(*(one(i) for i in range(cases)))
    rate = cases / (time.monotonic() - started)
    per_call = (time.process_time() - cpu) / cases
    await client.close()
    return rate, per_call


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--delay", type=float, default=0.2)
    parser.add_argument("--cases", type=int, default=400)
    parser.add_argument("--concurrency", type=int, nargs="+", default=[8, 32, 128])
    parser.add_argument("--workers", type=int, nargs="+", default=[1])
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
            for concurrency in args.concurrency:
                peer, peer_cpu = asyncio.run(bare_async_openai(url, args.cases, concurrency))
                for processes in args.workers:
                    rate, cpu = measure(
                        client, folder, url, args.cases, concurrency, env, processes
                    )
                    ceiling = processes * concurrency / args.delay
                    print(
                        f"concurrency {concurrency:>4} x {processes} worker(s): evalrelay "
                        f"{rate:6.1f}/s, bare AsyncOpenAI {peer:6.1f}/s, ceiling "
                        f"{ceiling:6.1f}/s; ratio to the peer {rate / peer:.2f}, to the "
                        f"ceiling {rate / ceiling:.2f}; CPU per call {cpu * 1000:.2f} ms vs "
                        f"{peer_cpu * 1000:.2f} ms (peer / evalrelay {peer_cpu / cpu:.2f})",
                        flush=True,
                    )
            if args.user:
                (folder / "targets.yaml").write_text(slow_target(url))
                peer, _ = asyncio.run(bare_async_openai(url, args.user, USER_CONCURRENCY))
                rate, exited = user_run(client, folder, url, args.user, env)
                print(
                    f"evalrelay run of {args.user} cases, a worker of concurrency "
                    f"{USER_CONCURRENCY} running: {rate:6.1f}/s from the first send to the last "
                    f"line ({exited:.1f} s from the command's start to its exit), bare "
                    f"AsyncOpenAI {peer:6.1f}/s; ratio {rate / peer:.2f}",
                    flush=True,
                )
    finally:
        server.terminate()
        server.wait()
        client.flushdb()


if __name__ == "__main__":
    main()

"""Throughput of the whole pipeline against bare Celery, on the same Redis, in one run.

    python bench/pipeline.py [--jobs 2000] [--concurrency 8] [--campaign 10000]

1. Bare Celery: N no-op tasks through a threads-pool worker (the baseline).
2. evalrelay: N mock cases through enqueue, worker, results stream, collector and JSONL,
   with a worker of the same pool and concurrency.
3. A campaign of `--campaign` cases: time to enqueue, time to finish, and the peak
   memory (VmHWM) of an `evalrelay collect` process writing it.
"""

from __future__ import annotations

import argparse
import os
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import redis

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench.reports import cell, measure  # noqa: E402
from evalrelay.bridge.cli.worker import default_processes  # noqa: E402
from evalrelay.bridge.evalfile.cases import load_eval_file  # noqa: E402
from evalrelay.bridge.keys import workers_key  # noqa: E402
from evalrelay.bridge.planning.campaigns import plan_jobs  # noqa: E402
from evalrelay.bridge.queue.campaigns import CampaignInfo, progress, submit  # noqa: E402
from evalrelay.bridge.queue.celery_queue import JobQueue  # noqa: E402
from evalrelay.bridge.results.collector import Collector  # noqa: E402
from tests.conftest import one_turn_cases  # noqa: E402

URL = os.environ.get("EVALRELAY_REDIS_URL", "redis://127.0.0.1:6379/14")


def start(args: list[str], env: dict[str, str]) -> subprocess.Popen[bytes]:
    return subprocess.Popen(
        args,
        env=env,
        cwd=ROOT,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )


def stop(process: subprocess.Popen[bytes]) -> None:
    os.killpg(process.pid, signal.SIGTERM)
    try:
        process.wait(20)
    except subprocess.TimeoutExpired:
        os.killpg(process.pid, signal.SIGKILL)


def wait(condition: object, seconds: float = 600) -> None:
    deadline = time.monotonic() + seconds
    while not condition():  # type: ignore[operator]
        if time.monotonic() > deadline:
            raise SystemExit("benchmark timed out")
        time.sleep(0.01)


def bare_celery(client: redis.Redis, jobs: int, concurrency: int, env: dict[str, str]) -> float:
    client.flushdb()
    worker = start(
        [
            sys.executable,
            "-m",
            "celery",
            "-A",
            "bench.noop_app",
            "worker",
            "-P",
            "threads",
            "-c",
            str(concurrency),
            "--without-mingle",
            "--without-gossip",
            "-l",
            "WARNING",
        ],
        env,
    )
    try:
        from bench.noop_app import noop

        time.sleep(3)
        started = time.monotonic()
        with noop.app.producer_or_acquire() as producer:
            for _ in range(jobs):
                noop.apply_async(producer=producer)
        wait(lambda: int(client.get("bench:noop:done") or 0) >= jobs)
        return jobs / (time.monotonic() - started)
    finally:
        stop(worker)


def eval_file(folder: Path, count: int) -> Path:
    (folder / "evalrelay.yaml").write_text("")
    path = folder / "bench.yaml"
    path.write_text(one_turn_cases(count))
    return path


def campaign(client: redis.Redis, folder: Path, count: int) -> tuple[CampaignInfo, float, float]:
    """Submit `count` mock cases from one eval file; returns the campaign, the seconds the
    file took to load, and the seconds planning and enqueueing took."""
    path = eval_file(folder, count)
    began = time.monotonic()
    loaded = load_eval_file(path)
    started = time.monotonic()
    campaign_id = f"bench-{time.time_ns()}"
    jobs = plan_jobs(campaign_id, [loaded], "mock", None)
    info = CampaignInfo.for_jobs(campaign_id, jobs, [], str(folder / "results"), "service")
    submit(client, JobQueue.connect(URL), info, jobs, [loaded])
    return info, started - began, time.monotonic() - started


def worker_processes(concurrency: int, processes: int) -> int:
    """How many processes `evalrelay worker -c CONCURRENCY --processes PROCESSES` runs (0: its
    default for an api worker)."""
    return processes or default_processes(["api"], "threads", concurrency)


def evalrelay_worker(
    client: redis.Redis,
    concurrency: int,
    env: dict[str, str],
    name: str = "bench@host",
    processes: int = 1,
) -> subprocess.Popen[bytes]:
    """`evalrelay worker`, once it serves: with `processes` > 1, once each of its processes
    (`NAME-1@host`, ...) does; with 0, as many as it has by default."""
    chosen = ["--processes", str(processes)] if processes else []
    worker = start(
        [sys.executable, "-m", "evalrelay", "worker", "-c", str(concurrency), *chosen,
         "-n", name, "-l", "WARNING"],
        env,
    )  # fmt: skip
    count = worker_processes(concurrency, processes)
    left, _, host = name.partition("@")
    names = [name] if count == 1 else [f"{left}-{n}@{host}" for n in range(1, count + 1)]
    wait(lambda: all(client.hexists(workers_key(), n) for n in names), 60)
    return worker


def pipeline(client: redis.Redis, jobs: int, concurrency: int, env: dict[str, str]) -> float:
    client.flushdb()
    worker = evalrelay_worker(client, concurrency, env)
    try:
        with tempfile.TemporaryDirectory() as folder:
            started = time.monotonic()
            info, _, _ = campaign(client, Path(folder), jobs)
            collector = Collector(client, "bench", lambda _: Path(info.out_dir))
            while not progress(client, info.campaign_id).finished:
                collector.poll([info.campaign_id], block_ms=100)
            collector.close()
            return jobs / (time.monotonic() - started)
    finally:
        stop(worker)


def big_campaign(client: redis.Redis, count: int, concurrency: int, env: dict[str, str]) -> None:
    """A campaign of `count` cases from one eval file: loaded, planned and enqueued, run by
    one worker, collected by `evalrelay collect`; then `status`, `report --html` and
    `compare` on it, each timed with its peak RSS."""
    client.flushdb()
    worker = evalrelay_worker(client, concurrency, env)
    try:
        with tempfile.TemporaryDirectory() as folder:
            info, load_seconds, enqueue_seconds = campaign(client, Path(folder), count)
            started = time.monotonic() - enqueue_seconds  # when the enqueueing began
            collect = start(
                [
                    sys.executable,
                    "-m",
                    "evalrelay",
                    "collect",
                    "--campaign",
                    info.campaign_id,
                ],
                env,
            )
            peak_kb = 0
            while not progress(client, info.campaign_id).finished:
                peak_kb = max(peak_kb, vm_hwm_kb(collect.pid))
                time.sleep(0.2)
            peak_kb = max(peak_kb, vm_hwm_kb(collect.pid))
            finished = time.monotonic() - started
            stop(collect)
            results = Path(info.out_dir) / f"{info.campaign_id}.jsonl"
            lines = sum(1 for _ in results.open())
            print(
                f"campaign of {count} cases: file loaded in {load_seconds:.1f} s; planned and "
                f"enqueued in {enqueue_seconds:.1f} s ({count / enqueue_seconds:.0f}/s); "
                f"all collected {finished:.1f} s after the enqueueing began "
                f"({count / finished:.0f}/s), {lines} lines, "
                f"collector peak RSS {peak_kb / 1024:.0f} MiB",
                flush=True,
            )
            cwd = Path(folder) / "commands"
            cwd.mkdir()
            html = cwd / "report.html"
            for label, args, written in (
                ("status CAMPAIGN", ["status", info.campaign_id], None),
                ("report --html", ["report", str(results), "--html", str(html)], html),
                ("compare CAMPAIGN CAMPAIGN", ["compare", str(results), str(results)], None),
            ):
                measured = measure(args, env, cwd, written)
                print(f"  {label}: {cell(measured)}", flush=True)
    finally:
        stop(worker)


def vm_hwm_kb(pid: int) -> int:
    """The process's peak resident memory so far (0 once it is gone)."""
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                return int(line.split()[1])
    except OSError:
        pass
    return 0


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--jobs", type=int, default=2000)
    parser.add_argument("--concurrency", type=int, default=8)
    parser.add_argument("--campaign", type=int, default=10_000)
    args = parser.parse_args()
    env = {**os.environ, "EVALRELAY_REDIS_URL": URL, "PYTHONPATH": str(ROOT)}
    client = redis.Redis.from_url(URL, decode_responses=True)
    baseline = bare_celery(client, args.jobs, args.concurrency, env)
    ours = pipeline(client, args.jobs, args.concurrency, env)
    print(
        f"bare Celery no-op tasks: {baseline:.0f}/s (threads pool, concurrency {args.concurrency})"
    )
    print(f"evalrelay mock cases, whole pipeline: {ours:.0f}/s")
    print(f"ratio evalrelay / bare Celery: {ours / baseline:.2f}")
    if args.campaign:
        big_campaign(client, args.campaign, args.concurrency, env)
    client.flushdb()


if __name__ == "__main__":
    main()

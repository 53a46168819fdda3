"""Redis memory per case: a mock campaign of N cases on a private Redis, end to end.

    python bench/redis_memory.py [--cases 20000] [--workers 1] [--concurrency 8] [--settle 60]
        [--graded]

A redis-server of its own (no persistence), `--workers` `evalrelay worker` processes and an
`evalrelay collect` run a campaign of `--cases` mock cases (one system and one user message
each, answers of about 200 characters). Printed: Redis's used memory empty, at its peak
(INFO memory sampled every 0.2 s) and `--settle` seconds after the campaign ended (workers
and collector still running, as in a fleet); the peak RSS of the collector (and its growth
per case from a quarter of the cases to the end) and of the workers; the enqueue time and
the total time; and whether the JSONL holds every case exactly once.

The cases are written as eval files of `FILE_CASES` each and planned and sent a file at a
time (as `submit` does: stored, then sent), so a million cases fit in the bench's memory.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path

import redis

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench.pipeline import vm_hwm_kb  # noqa: E402
from evalrelay.bridge.evalfile.cases import load_eval_file  # noqa: E402
from evalrelay.bridge.keys import workers_key  # noqa: E402
from evalrelay.bridge.planning.campaigns import plan_jobs  # noqa: E402
from evalrelay.bridge.queue.campaigns import CampaignInfo, announce, progress, store_jobs  # noqa: E402
from evalrelay.bridge.queue.celery_queue import JobQueue  # noqa: E402
from tests.conftest import free_port  # noqa: E402

FILE_CASES = 10_000
"""Cases per eval file: under the loader's default limit, and a bounded chunk to plan."""

ANSWER = ("The answer, as a model would give it at some length. " * 4).strip()
"""About 200 characters, the mock target's answer to every case."""

SYSTEM = "You are a careful assistant. Answer in one short paragraph."

SAMPLE_SECONDS = 0.2

PROGRESS_SECONDS = 30.0
"""How often a progress line is printed while the campaign runs."""


@dataclass
class MemorySampler:
    """Redis's `used_memory`, sampled in a thread; and the peak RSS of watched processes."""

    client: redis.Redis
    pids: list[int] = field(default_factory=list)
    peak: int = 0
    rss_kb: dict[int, int] = field(default_factory=dict)
    stopping: threading.Event = field(default_factory=threading.Event)
    collector: tuple[int, str] | None = None
    """The collector's pid and campaign, once started."""
    growth: dict[int, int] = field(default_factory=dict)
    """The collector's RSS (KiB) when a quarter, a half... of the cases were collected."""

    def start(self) -> None:
        threading.Thread(target=self._run, daemon=True).start()

    def _run(self) -> None:
        while not self.stopping.wait(SAMPLE_SECONDS):
            self.sample()

    def sample(self) -> None:
        self.peak = max(self.peak, used_memory(self.client))
        for pid in self.pids:
            self.rss_kb[pid] = max(self.rss_kb.get(pid, 0), vm_hwm_kb(pid))
        if self.collector is not None:
            pid, campaign_id = self.collector
            state = progress(self.client, campaign_id)
            quarter = 4 * state.done // max(state.total, 1)
            if quarter and quarter not in self.growth:
                self.growth[quarter] = vm_hwm_kb(pid)


def used_memory(client: redis.Redis) -> int:
    return int(client.info("memory")["used_memory"])


def start(args: list[str], env: dict[str, str], log: Path) -> subprocess.Popen[bytes]:
    return subprocess.Popen(
        args,
        env=env,
        cwd=ROOT,
        stdout=log.open("ab"),
        stderr=subprocess.STDOUT,
        start_new_session=True,
    )


def stop(process: subprocess.Popen[bytes]) -> None:
    with_signal(process, signal.SIGTERM)
    try:
        process.wait(30)
    except subprocess.TimeoutExpired:
        with_signal(process, signal.SIGKILL)
        process.wait(10)


def with_signal(process: subprocess.Popen[bytes], signum: int) -> None:
    with contextlib.suppress(ProcessLookupError):
        os.killpg(process.pid, signum)


def write_project(folder: Path, cases: int, graded: bool = False) -> list[Path]:
    """The project (a mock target answering `ANSWER`) and its eval files; `graded`: each
    case has an evaluator (`contains`), so the collector keeps every score for the
    summary's statistics."""
    evaluators = {"evaluators": [{"type": "contains", "value": "answer"}]} if graded else {}
    (folder / "evalrelay.yaml").write_text("default_target: mock\n")
    target = {"name": "mock", "provider": "mock", "response": ANSWER}
    (folder / "targets.yaml").write_text(f"targets:\n  - {json.dumps(target)}\n")
    files = []
    for number, first in enumerate(range(0, cases, FILE_CASES)):
        lines = [
            json.dumps(
                {
                    "id": f"c{i}",
                    "input_messages": [
                        {"role": "system", "content": SYSTEM},
                        {"role": "user", "content": f"Question number {i}: what is {i} + {i}?"},
                    ],
                    **evaluators,
                }
            )
            for i in range(first, min(first + FILE_CASES, cases))
        ]
        path = folder / f"part{number:04d}.yaml"
        path.write_text(
            f"dataset: bench{number:04d}\nevalcases:\n" + "".join(f"  - {line}\n" for line in lines)
        )
        files.append(path)
    return files


def enqueue(
    client: redis.Redis,
    queue: JobQueue,
    campaign_id: str,
    files: list[Path],
    cases: int,
    out: Path,
    announced: Callable[[], object],
) -> None:
    """Announce the campaign, then plan, store and send its jobs a file at a time."""
    first = load_eval_file(files[0])
    info = CampaignInfo(
        campaign_id=campaign_id,
        created_at=datetime.now(UTC),
        sources=[str(f) for f in files],
        targets=["mock"],
        total=cases,
        out_dir=str(out),
        collector="service",
        queues=["api"],
    )
    announce(client, info, [first])
    announced()
    for path in files:
        loaded = first if path == files[0] else load_eval_file(path)
        jobs = plan_jobs(campaign_id, [loaded], None, None)
        store_jobs(client, jobs)
        queue.send(jobs)


def check_once_each(path: Path, cases: int) -> str:
    """Every case exactly once in the JSONL: `ok`, or what is wrong."""
    seen: set[str] = set()
    doubled = 0
    with path.open() as lines:
        for line in lines:
            case = json.loads(line)["case_id"]
            doubled += case in seen
            seen.add(case)
    missing = cases - len(seen)
    return "ok" if not doubled and not missing else f"{missing} missing, {doubled} doubled"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cases", type=int, default=20_000)
    parser.add_argument("--workers", type=int, default=1)
    parser.add_argument("--concurrency", type=int, default=8)
    parser.add_argument(
        "--settle",
        type=float,
        default=60.0,
        help="Seconds after the end to measure what Redis keeps.",
    )
    parser.add_argument("--graded", action="store_true", help="Give each case an evaluator.")
    parser.add_argument("--keep", action="store_true", help="Keep the temporary folder.")
    args = parser.parse_args()

    folder = Path(tempfile.mkdtemp(prefix="evalrelay-memory-"))
    port = free_port()
    url = f"redis://127.0.0.1:{port}/0"
    server = subprocess.Popen(
        ["redis-server", "--port", str(port), "--save", "", "--appendonly", "no",
         "--bind", "127.0.0.1", "--dir", str(folder)],
        stdout=subprocess.DEVNULL, start_new_session=True,
    )  # fmt: skip
    processes: list[subprocess.Popen[bytes]] = []
    try:
        client = redis.Redis.from_url(url, decode_responses=True)
        deadline = time.monotonic() + 10
        while True:
            try:
                client.ping()
                break
            except redis.ConnectionError:
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.05)
        env = {
            **os.environ,
            "EVALRELAY_REDIS_URL": url,
            "EVALRELAY_HOME": str(folder / "home"),
            "PYTHONPATH": str(ROOT),
        }
        os.environ.update({k: env[k] for k in ("EVALRELAY_REDIS_URL", "EVALRELAY_HOME")})
        project = folder / "project"
        project.mkdir()
        files = write_project(project, args.cases, args.graded)
        empty = used_memory(client)
        cli = [sys.executable, "-m", "evalrelay"]
        workers = []
        for number in range(args.workers):
            name = f"bench{number}@host"
            workers.append(start(
                [*cli, "worker", "-c", str(args.concurrency), "-n", name, "-l", "WARNING"],
                env, folder / f"worker{number}.log",
            ))  # fmt: skip
            processes.append(workers[-1])
        for number in range(args.workers):
            wait_for(lambda n=number: client.hexists(workers_key(), f"bench{n}@host"), 60)
        sampler = MemorySampler(client, [w.pid for w in workers])
        sampler.start()
        campaign_id = f"memory-{time.time_ns()}"
        out = folder / "results"
        started = time.monotonic()
        queue = JobQueue.connect(url)
        collector: subprocess.Popen[bytes] | None = None

        def start_collector() -> None:
            nonlocal collector
            collector = start(
                [*cli, "collect", "--campaign", campaign_id, "--out", str(out)],
                env, folder / "collect.log",
            )  # fmt: skip
            processes.append(collector)
            sampler.pids.append(collector.pid)
            sampler.collector = (collector.pid, campaign_id)

        enqueue(client, queue, campaign_id, files, args.cases, out, start_collector)
        enqueued = time.monotonic() - started
        print(f"enqueued {args.cases} cases in {enqueued:.1f} s", flush=True)
        assert collector is not None
        running = collector

        shown = [time.monotonic()]
        growth = sampler.growth

        def finished() -> bool:
            state = progress(client, campaign_id)
            if running.poll() is not None and not state.finished:
                raise SystemExit(f"the collector ended early; see {folder / 'collect.log'}")
            if time.monotonic() - shown[0] >= PROGRESS_SECONDS:
                shown[0] = time.monotonic()
                print(
                    f"  {time.monotonic() - started:.0f} s: {state.done}/{state.total} "
                    f"collected; redis {used_memory(client) / 2**20:.1f} MiB, "
                    f"peak {sampler.peak / 2**20:.1f} MiB",
                    flush=True,
                )
            return state.finished

        wait_for(finished, 24 * 3600)
        wait_for(lambda: running.poll() is not None, 120)  # it ends once the file is whole
        total = time.monotonic() - started
        sampler.sample()
        sampler.stopping.set()
        peak = sampler.peak
        print(f"all collected {total:.1f} s after the enqueueing began", flush=True)
        time.sleep(args.settle)
        left = used_memory(client)
        check = check_once_each(out / f"{campaign_id}.jsonl", args.cases)
        mib = 1024 * 1024
        worker_rss = max(sampler.rss_kb.get(w.pid, 0) for w in workers) / 1024
        print(
            f"cases {args.cases}; workers {args.workers} x {args.concurrency}\n"
            f"redis used_memory: empty {empty / mib:.1f} MiB, peak {peak / mib:.1f} MiB "
            f"({(peak - empty) / args.cases:.0f} B/case), "
            f"{args.settle:.0f} s after the end {left / mib:.1f} MiB "
            f"({(left - empty) / args.cases:.0f} B/case)\n"
            f"peak RSS: collector {sampler.rss_kb.get(collector.pid, 0) / 1024:.0f} MiB, "
            f"worker {worker_rss:.0f} MiB\n"
            f"collector peak RSS at 1/4, 2/4, 3/4, 4/4 of the cases: "
            f"{', '.join(f'{growth.get(q, 0) / 1024:.0f}' for q in (1, 2, 3, 4))} MiB; "
            f"from 1/4 to 4/4 {per_case_growth(growth, args.cases):.0f} B/case (then the final "
            f"summary and HTML report)\n"
            f"enqueue {enqueued:.1f} s ({args.cases / enqueued:.0f}/s), "
            f"total {total:.1f} s ({args.cases / total:.0f}/s)\n"
            f"every case exactly once in the JSONL: {check}",
            flush=True,
        )
        if check != "ok":
            raise SystemExit(1)
    finally:
        for process in processes:
            stop(process)
        server.terminate()
        server.wait(10)
        if not args.keep:
            shutil.rmtree(folder, ignore_errors=True)
        else:
            print(f"kept {folder}")


def per_case_growth(growth: dict[int, int], cases: int) -> float:
    """The collector's peak RSS growth per case from a quarter of the cases to all of them."""
    if 1 not in growth or 4 not in growth:
        return float("nan")
    return (growth[4] - growth[1]) * 1024 / (cases * 3 / 4)


def wait_for(condition: object, seconds: float) -> None:
    deadline = time.monotonic() + seconds
    while not condition():  # type: ignore[operator]
        if time.monotonic() > deadline:
            raise SystemExit("benchmark timed out")
        time.sleep(0.2)


if __name__ == "__main__":
    main()

"""Drop-to-enqueue latency of the inbox watcher, next to submitting the same file directly.

    python bench/watcher.py [--singles 30] [--burst 1000]

Latency is from the moment a file is closed in the inbox to the moment it reaches
`queued/` (its jobs are on the queue by then). The same-run baseline is the time the
watcher's own work takes without any watching: load, validate and submit the file.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import threading
import time
from datetime import UTC, datetime
from pathlib import Path

import redis

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bridge.evalfile.cases import load_eval_file  # noqa: E402
from bridge.inbox.watcher import Watcher  # noqa: E402
from bridge.queue.campaigns import CampaignInfo, new_campaign_id, plan_jobs, submit  # noqa: E402
from bridge.queue.celery_queue import JobQueue  # noqa: E402

URL = os.environ.get("EVALRELAY_REDIS_URL", "redis://127.0.0.1:6379/14")
CASE = "evalcases:\n  - id: c{n}\n    input_messages: [{{role: user, content: 'hi {n}'}}]\n"


def percentile(values: list[float], share: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(share * len(ordered)))]


def show(label: str, seconds: list[float]) -> float:
    median = statistics.median(seconds)
    print(
        f"{label}: median {median * 1000:.0f} ms, p99 {percentile(seconds, 0.99) * 1000:.0f} ms "
        f"({len(seconds)} files)"
    )
    return median


def direct(folder: Path, queue: JobQueue, client: redis.Redis, count: int) -> list[float]:
    times = []
    for n in range(count):
        path = folder / f"direct{n}.yaml"
        path.write_text(CASE.format(n=n))
        started = time.monotonic()
        loaded = load_eval_file(path)
        campaign_id = new_campaign_id([loaded])
        jobs = plan_jobs(campaign_id, [loaded], "mock", None)
        info = CampaignInfo(
            campaign_id=campaign_id,
            created_at=datetime.now(UTC),
            sources=[],
            targets=["mock"],
            total=1,
            out_dir=str(folder),
            collector="service",
        )
        submit(client, queue, info, jobs, [loaded])
        times.append(time.monotonic() - started)
    return times


def watched(inbox: Path, names: list[str], gap: float) -> list[float]:
    """Drop the files (with `gap` seconds between them); latency of each to queued/."""
    dropped: dict[str, float] = {}
    arrived: dict[str, float] = {}
    done = threading.Event()
    wanted = set(names)

    def observe() -> None:
        while not done.is_set():
            now = time.monotonic()
            for path in (inbox / "queued").iterdir():
                if path.name in wanted:
                    arrived.setdefault(path.name, now)
            if len(arrived) == len(names):
                return
            time.sleep(0.002)

    observer = threading.Thread(target=observe, daemon=True)
    observer.start()
    for name in names:
        (inbox / name).write_text(CASE.format(n=name))  # distinct content: no duplicates
        dropped[name] = time.monotonic()
        if gap:
            while name not in arrived:
                time.sleep(0.002)
            time.sleep(gap)
    observer.join(600)
    done.set()
    return [arrived[name] - dropped[name] for name in names]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--singles", type=int, default=30)
    parser.add_argument("--burst", type=int, default=1000)
    args = parser.parse_args()
    client = redis.Redis.from_url(URL, decode_responses=True)
    client.flushdb()
    queue = JobQueue.connect(URL)
    with tempfile.TemporaryDirectory() as folder:
        root = Path(folder)
        (root / "evalrelay.yaml").write_text("")
        baseline = show("direct submit (baseline)", direct(root, queue, client, args.singles))
        inbox = root / "inbox"
        watcher = Watcher(client, queue, inbox, root / "results", default_target="mock")
        stop = threading.Event()
        thread = threading.Thread(target=watcher.run, args=(stop,), daemon=True)
        thread.start()
        time.sleep(1)
        singles = show(
            "watcher, single files",
            watched(inbox, [f"s{n}.yaml" for n in range(args.singles)], gap=0.05),
        )
        show(
            f"watcher, burst of {args.burst}",
            watched(inbox, [f"b{n}.yaml" for n in range(args.burst)], gap=0),
        )
        stop.set()
        thread.join(30)
    print(f"ratio single-file latency / direct submit: {singles / baseline:.1f}")
    client.flushdb()


if __name__ == "__main__":
    main()

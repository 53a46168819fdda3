"""Drop-to-enqueue latency of the inbox watcher, next to submitting the same files directly.

    python bench/watcher.py [--singles 30] [--burst 1000]

Latency is from the moment a file is closed in the inbox to the moment it reaches
`queued/` (its jobs are on the queue by then). The same-run baseline is the time the
watcher's own work takes without any watching: load, validate and submit the file; for
the burst, submitting the burst's files one after another, each timed from the start.
The watcher's figures include its settle period (2 s), which a direct submit does not
wait. The database at EVALRELAY_REDIS_URL (default db 14) is flushed before and after.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import threading
import time
from pathlib import Path

import redis

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from evalrelay.bridge.evalfile.cases import load_eval_file  # noqa: E402
from evalrelay.bridge.inbox.watcher import Watcher  # noqa: E402
from evalrelay.bridge.planning.campaigns import plan_jobs  # noqa: E402
from evalrelay.bridge.queue.campaigns import CampaignInfo, new_campaign_id, submit  # noqa: E402
from evalrelay.bridge.queue.celery_queue import JobQueue  # noqa: E402

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
    """Each file written, then timed alone: load, validate and submit."""
    times = []
    for n in range(count):
        path = folder / f"direct{n}.yaml"
        path.write_text(CASE.format(n=n))
        started = time.monotonic()
        submit_directly(path, folder, queue, client)
        times.append(time.monotonic() - started)
    return times


def direct_burst(folder: Path, queue: JobQueue, client: redis.Redis, count: int) -> list[float]:
    """Every file written first, then submitted in a row: each one's time from the start."""
    paths = [folder / f"direct-burst{n}.yaml" for n in range(count)]
    for n, path in enumerate(paths):
        path.write_text(CASE.format(n=f"burst{n}"))
    started = time.monotonic()
    times = []
    for path in paths:
        submit_directly(path, folder, queue, client)
        times.append(time.monotonic() - started)
    return times


def submit_directly(path: Path, folder: Path, queue: JobQueue, client: redis.Redis) -> None:
    loaded = load_eval_file(path)
    campaign_id = new_campaign_id([loaded])
    jobs = plan_jobs(campaign_id, [loaded], "mock", None)
    info = CampaignInfo.for_jobs(campaign_id, jobs, [], str(folder), "service")
    submit(client, queue, info, jobs, [loaded])


def watched(inbox: Path, names: list[str], gap: float) -> list[float]:
    """Drop the files (with `gap` seconds between them); latency of each to queued/."""
    dropped: dict[str, float] = {}
    arrived: dict[str, float] = {}
    done = threading.Event()
    wanted = set(names)

    def observe() -> None:
        # Names only, no Path objects: this thread shares the GIL with the watcher's.
        while not done.is_set():
            now = time.monotonic()
            for name in wanted.intersection(os.listdir(inbox / "queued")).difference(arrived):
                arrived[name] = now
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
        in_a_row = direct_burst(root, queue, client, args.burst)
        show(f"direct submit of {args.burst} files in a row (baseline)", in_a_row)
        inbox = root / "inbox"
        watcher = Watcher(client, queue, inbox, root / "results", default_target="mock")
        print(f"watcher settle period: {watcher.settler.settle:.1f} s")
        stop = threading.Event()
        thread = threading.Thread(target=watcher.run, args=(stop,), daemon=True)
        thread.start()
        time.sleep(1)
        singles = show(
            "watcher, single files",
            watched(inbox, [f"s{n}.yaml" for n in range(args.singles)], gap=0.05),
        )
        burst = watched(inbox, [f"b{n}.yaml" for n in range(args.burst)], gap=0)
        show(f"watcher, burst of {args.burst}", burst)
        stop.set()
        thread.join(30)
    print(f"ratio single-file latency / direct submit: {singles / baseline:.1f}")
    print(
        f"ratio burst p99 / direct submit in a row p99: "
        f"{percentile(burst, 0.99) / percentile(in_a_row, 0.99):.1f}"
    )
    client.flushdb()


if __name__ == "__main__":
    main()

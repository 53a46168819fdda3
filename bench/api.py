"""One `api` worker process against a loopback OpenAI-compatible server that answers after a
fixed delay: cases per second at several concurrencies, next to the ceiling
concurrency / delay, in one run.

    python bench/api.py [--delay 0.2] [--cases 400] [--concurrency 8 32 128]
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from pathlib import Path

import redis

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench.pipeline import URL, evalrelay_worker, stop, wait  # noqa: E402
from bridge.evalfile.cases import load_eval_file  # noqa: E402
from bridge.keys import results_stream_key  # noqa: E402
from bridge.queue.campaigns import plan_jobs  # noqa: E402
from bridge.queue.celery_queue import JobQueue  # noqa: E402
from tests.conftest import one_turn_cases  # noqa: E402
from tests.worker.providers.vendor_server import Reply, openai_chat, serving  # noqa: E402


def measure(
    client: redis.Redis, folder: Path, url: str, cases: int, concurrency: int, env: dict[str, str]
) -> float:
    client.flushdb()
    (folder / "targets.yaml").write_text(
        f"targets:\n  - {{name: slow, provider: openai-compatible, model: m, "
        f"base_url: '{url}/v1'}}\n"
    )
    worker = evalrelay_worker(client, concurrency, env)
    try:
        campaign = f"api-{concurrency}"
        jobs = plan_jobs(campaign, [load_eval_file(folder / "bench.yaml")], "slow", None)
        started = time.monotonic()
        JobQueue.connect(URL).send(jobs)
        wait(lambda: client.xlen(results_stream_key(campaign)) >= cases, 900)
        return cases / (time.monotonic() - started)
    finally:
        stop(worker)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--delay", type=float, default=0.2)
    parser.add_argument("--cases", type=int, default=400)
    parser.add_argument("--concurrency", type=int, nargs="+", default=[8, 32, 128])
    args = parser.parse_args()
    env = {
        **os.environ,
        "EVALRELAY_REDIS_URL": URL,
        "PYTHONPATH": str(ROOT),
        "OPENAI_API_KEY": "bench",
    }
    client = redis.Redis.from_url(URL, decode_responses=True)
    with (
        tempfile.TemporaryDirectory() as name,
        serving(Reply(openai_chat(), delay=args.delay)) as server,
    ):
        folder = Path(name)
        (folder / "evalrelay.yaml").write_text("")
        (folder / "bench.yaml").write_text(one_turn_cases(args.cases))
        for concurrency in args.concurrency:
            rate = measure(client, folder, server.url, args.cases, concurrency, env)
            ceiling = concurrency / args.delay
            print(
                f"concurrency {concurrency:>4}: {rate:6.1f} cases/s, ceiling {ceiling:6.1f}/s, "
                f"ratio {rate / ceiling:.2f}"
            )
    client.flushdb()


if __name__ == "__main__":
    main()

"""What `runtime: sandbox` costs each attempt: one `cli` agent job (`echo ok`) through the
worker's own `execute`, under `runtime: host` (the baseline, same run), under bubblewrap
and in a Docker container, without and with a declared endpoint (the relay).

    EVALRELAY_TEST_REDIS_URL=redis://127.0.0.1:6379/13 python bench/sandbox.py [--runs 20]

The Docker image is the tests' (built when missing, as the tests do). Each figure is the
median and the 90th percentile of `--runs` attempts, start of the job to its result.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import textwrap
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import redis  # noqa: E402

from evalrelay.worker.execute import execute  # noqa: E402
from tests.conftest import TEST_REDIS_URL  # noqa: E402
from tests.worker.agents.sandbox_images import sandbox_image  # noqa: E402
from tests.worker.providers.agent_cases import agent_project, planned_job  # noqa: E402


def attempt_seconds(client: redis.Redis, folder: Path, settings: dict[str, object]) -> float:
    target = {"name": "agent", "provider": "cli", "command": ["echo", "ok"], **settings}

    def write(files: dict[str, str]) -> Path:
        root = Path(tempfile.mkdtemp(dir=folder))
        (root / "evalrelay.yaml").write_text("{}\n")
        for name, text in files.items():
            (root / name).parent.mkdir(parents=True, exist_ok=True)
            (root / name).write_text(textwrap.dedent(text))
        return root

    root = agent_project(write, json.dumps({"targets": [target]}), "Go")
    job = planned_job(root, client, "agent")
    began = time.perf_counter()
    result = execute(job, "bench", client)
    seconds = time.perf_counter() - began
    assert result.status.value == "ok", result.error
    return seconds


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=20)
    runs = parser.parse_args().runs
    client = redis.Redis.from_url(os.environ.get("EVALRELAY_TEST_REDIS_URL", TEST_REDIS_URL))
    image = sandbox_image()
    endpoint = {"network": ["127.0.0.1:9"]}  # the relay listens; nothing is dialled
    runtimes: dict[str, dict[str, object]] = {
        "host": {"runtime": "host"},
        "bubblewrap": {"runtime": "sandbox", "isolation": {"engine": "bubblewrap"}},
        "bubblewrap + relay": {
            "runtime": "sandbox",
            "isolation": {"engine": "bubblewrap", **endpoint},
        },
        "docker": {"runtime": "sandbox", "isolation": {"engine": "docker", "image": image}},
        "docker + relay": {
            "runtime": "sandbox",
            "isolation": {"engine": "docker", "image": image, **endpoint},
        },
    }
    with tempfile.TemporaryDirectory(prefix="evalrelay-bench-") as scratch:
        os.environ["EVALRELAY_HOME"] = str(Path(scratch) / "home")
        baseline = None
        for name, settings in runtimes.items():
            attempt_seconds(client, Path(scratch), settings)  # warm: images, caches
            times = sorted(attempt_seconds(client, Path(scratch), settings) for _ in range(runs))
            median, p90 = statistics.median(times), times[int(0.9 * (len(times) - 1))]
            baseline = median if baseline is None else baseline
            extra = f"  (+{median - baseline:.3f} s over host)" if name != "host" else ""
            print(f"{name:20s} median {median:.3f} s  p90 {p90:.3f} s{extra}")


if __name__ == "__main__":
    main()

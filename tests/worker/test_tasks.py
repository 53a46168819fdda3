"""`run_case` under failure: killed pool processes, killed workers, duplicate deliveries.

Every test uses real worker processes on a real Redis, and checks the campaign's JSONL:
each job exactly once.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time
from datetime import UTC, datetime
from pathlib import Path

import redis

from evalrelay.bridge.contract.job import Job
from evalrelay.bridge.evalfile.cases import load_eval_file
from evalrelay.bridge.keys import inflight_key, lease_key, results_stream_key
from evalrelay.bridge.planning.campaigns import plan_jobs
from evalrelay.bridge.queue.campaigns import CampaignInfo, progress, submit
from evalrelay.bridge.queue.celery_queue import JobQueue
from evalrelay.bridge.results.result import Status
from evalrelay.bridge.targets.settings import TargetSettings
from evalrelay.worker.loop import worker_loop
from evalrelay.worker.providers.base import Provider, ProviderOutput, register, unregister
from tests.conftest import (
    FAST_RECOVERY,
    Processes,
    WriteFiles,
    one_turn_cases,
    read_jsonl,
    wait_for,
)

SLOW_TARGETS = "targets:\n  - {name: slow, provider: mock, latency_ms: 4000}\n"


def submit_campaign(
    redis_url: str, root: Path, count: int, collector: str = "service", target: str = "slow"
) -> CampaignInfo:
    loaded = load_eval_file(root / "evals.yaml")
    campaign_id = f"test-{time.time_ns()}"
    jobs = plan_jobs(campaign_id, [loaded], target, None)
    info = CampaignInfo(
        campaign_id=campaign_id,
        created_at=datetime.now(UTC),
        sources=[str(root / "evals.yaml")],
        targets=[target],
        total=count,
        out_dir=str(root / "results"),
        collector=collector,
    )  # type: ignore[arg-type]
    client = redis.Redis.from_url(redis_url, decode_responses=True)
    submit(client, JobQueue.connect(redis_url), info, jobs, [loaded])
    return info


def holder(client: redis.Redis, job_id: str) -> str | None:
    token = client.get(lease_key(job_id))
    return token.rsplit(":", 1)[0] if token else None


def collect_all(
    processes: Processes, client: redis.Redis, info: CampaignInfo, seconds: float
) -> list[dict[str, object]]:
    processes.start("collect", "--campaign", info.campaign_id, name="collector")
    wait_for(
        lambda: progress(client, info.campaign_id).finished,
        seconds,
        f"campaign {info.campaign_id} to finish",
    )
    lines = read_jsonl(Path(info.out_dir) / f"{info.campaign_id}.jsonl")
    assert len(lines) == info.total
    assert len({line["job_id"] for line in lines}) == info.total
    return lines


def test_pool_process_killed_mid_job(
    project: WriteFiles, processes: Processes, client: redis.Redis, redis_url: str
) -> None:
    root = project({"targets.yaml": SLOW_TARGETS, "evals.yaml": one_turn_cases(6)})
    # The killed child's job comes back when its lease runs out: 3 s here, not 30.
    worker = processes.worker(
        client, "prefork@test", "--pool", "prefork", "--concurrency", "2", extra_env=FAST_RECOVERY
    )
    info = submit_campaign(redis_url, root, 6)
    wait_for(lambda: client.zcard(inflight_key()) > 0, 30, "a job to start")
    children = subprocess.run(["pgrep", "-P", str(worker.pid)], capture_output=True, text=True)
    pool_pid = int(children.stdout.split()[0])
    os.kill(pool_pid, signal.SIGKILL)
    lines = collect_all(processes, client, info, 120)
    assert {line["status"] for line in lines} == {"ok"}
    assert worker.poll() is None  # the worker itself survived and replaced its child


def test_whole_worker_killed_its_jobs_run_again_within_a_minute(
    project: WriteFiles, processes: Processes, client: redis.Redis, redis_url: str
) -> None:
    root = project({"targets.yaml": SLOW_TARGETS, "evals.yaml": one_turn_cases(4)})
    doomed = processes.worker(client, "doomed@test", "--concurrency", "4")
    info = submit_campaign(redis_url, root, 4)
    wait_for(lambda: client.zcard(inflight_key()) == 4, 30, "all four jobs to start")
    running = [job_id for job_id in client.zrange(inflight_key(), 0, -1)]
    assert {holder(client, job_id) for job_id in running} == {"doomed@test"}
    os.killpg(doomed.pid, signal.SIGKILL)
    killed_at = time.monotonic()
    processes.worker(client, "rescuer@test", "--concurrency", "4")
    wait_for(
        lambda: all(holder(client, j) == "rescuer@test" for j in running),
        60,
        "the killed worker's jobs to run on the rescuer",
    )
    assert time.monotonic() - killed_at < 60
    lines = collect_all(processes, client, info, 60)
    assert {line["worker"] for line in lines} == {"rescuer@test"}


def test_same_job_delivered_twice_runs_once(
    project: WriteFiles, processes: Processes, client: redis.Redis, redis_url: str
) -> None:
    root = project({"targets.yaml": SLOW_TARGETS, "evals.yaml": one_turn_cases(1)})
    processes.worker(client, "twice@test", "--concurrency", "4")
    loaded = load_eval_file(root / "evals.yaml")
    (job,) = plan_jobs("dup", [loaded], "slow", None)
    queue = JobQueue.connect(redis_url)
    queue.send([job])
    queue.send([job])
    wait_for(lambda: client.xlen(results_stream_key("dup")) == 1, 30, "the result")
    wait_for(
        lambda: "this delivery is ignored" in processes.log("twice@test"),
        30,
        "the second delivery to be ignored",
    )
    wait_for(
        lambda: processes.log("twice@test").count("succeeded in") == 2,
        30,
        "both deliveries to finish",
    )
    assert client.xlen(results_stream_key("dup")) == 1
    assert processes.log("twice@test").count("ok (published)") == 1


class CountingProvider(Provider):
    calls = 0
    lock = threading.Lock()

    def run(self, job: Job, deadline: float) -> ProviderOutput:
        with self.lock:
            CountingProvider.calls += 1
        time.sleep(0.5)
        return ProviderOutput(answer="counted")


def test_concurrent_deliveries_call_the_provider_once(
    project: WriteFiles, client: redis.Redis, redis_url: str
) -> None:
    root = project(
        {
            "targets.yaml": "targets:\n  - {name: slow, provider: mock}\n",
            "evals.yaml": one_turn_cases(1),
        }
    )
    (job,) = plan_jobs("once", [load_eval_file(root / "evals.yaml")], "slow", None)

    def factory(settings: TargetSettings) -> Provider:
        return CountingProvider(settings)

    register(("mock",), factory)
    try:
        outcomes: list[str] = []
        threads = [
            threading.Thread(
                target=lambda name=f"w{i}": outcomes.append(run_one(redis_url, client, job, name))
            )
            for i in range(4)
        ]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
    finally:
        unregister(("mock",))
    assert CountingProvider.calls == 1
    assert sorted(outcomes).count(Status.OK.value) == 1
    assert client.xlen(results_stream_key("once")) == 1
    assert run_one(redis_url, client, job, "late") == "duplicate"


def test_worker_cli_without_cluster_url_is_a_clear_error() -> None:
    env = {k: v for k, v in os.environ.items() if k != "EVALRELAY_REDIS_URL"}
    done = subprocess.run(
        [sys.executable, "-m", "evalrelay", "worker"],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 1
    assert "set EVALRELAY_REDIS_URL to the cluster's Redis" in done.stderr


def run_one(url: str, client: redis.Redis, job: Job, worker: str) -> str:
    """The job run as `run_case` runs it, from this thread, for a message of its own."""
    return worker_loop().run_one(client, JobQueue.connect(url), job, worker, f"to-{worker}")

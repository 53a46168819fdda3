"""Container tasks on a fleet: two worker hosts share twenty trials of a task only the
submitter has on disk; one worker is killed in the middle of a trial. Every trial ends
with exactly one line, and no container is left behind."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from tests.conftest import read_jsonl, wait_for
from tests.fleet.netns import Fleet

pytestmark = pytest.mark.fleet

TRIALS = 20


def write_task(folder: Path, base: str) -> None:
    files = {
        "task.toml": '[task]\nname = "fleet/slow-echo"\n[environment]\ncpus = 0.5\n'
        "memory_mb = 256\n",
        "instruction.md": "Write done into /tmp/out.\n",
        "environment/Dockerfile": f"FROM {base}\n",
        "solution/solve.sh": "sleep 2\necho done > /tmp/out\n",
        "tests/test.sh": 'if [ "$(cat /tmp/out)" = done ]; then r=1; else r=0; fi\n'
        "echo $r > /logs/verifier/reward.txt\n",
    }
    for name, text in files.items():
        path = folder / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)


def containers(host: str, running_only: bool = False) -> list[str]:
    argv = ["docker", "ps", "--filter", f"label=evalrelay.host={host}", "-q"]
    done = subprocess.run(argv + ([] if running_only else ["--all"]), capture_output=True,
                          text=True, check=True)  # fmt: skip
    return done.stdout.split()


def jobs_in(host: str) -> set[str]:
    """The jobs whose trial containers the host's workers left."""
    argv = ["docker", "ps", "--all", "--filter", f"label=evalrelay.host={host}"]
    done = subprocess.run([*argv, "--format", '{{.Label "evalrelay.job"}}'], capture_output=True,
                          text=True, check=True)  # fmt: skip
    return set(done.stdout.split())


def test_two_hosts_share_trials_and_a_killed_workers_trial_runs_again_once(
    fleet: Fleet,
) -> None:
    from tests.worker.agents.sandbox_images import base_image, docker_engine

    docker_engine()
    base = base_image()
    redis = fleet.add_redis()
    one, two = fleet.add_host("tasks-1"), fleet.add_host("tasks-2")
    submitter, collector = fleet.add_host("submitter"), fleet.add_host("collector")
    redis.start()
    budget = {"EVALRELAY_TASK_CPUS": "1"}  # two trials at once on each host
    workers = {
        host.name: host.start(
            "worker", "--queues", "task", "--name", host.name, "-c", "2", name="worker", env=budget
        )
        for host in (one, two)
    }
    results = collector.folder / "results"
    collector.start("collect", "--out", str(results), "--name", "collector", name="collect")
    for host in (one, two):
        fleet.wait_for_worker(host.name)

    write_task(submitter.work / "tasks" / "slow-echo", base)
    submitted = submitter.run(
        "run", "tasks", "--detach", "--target", "oracle", "--repeats", str(TRIALS),
        "--out", str(submitter.folder / "results"),
    )  # fmt: skip
    assert submitted.returncode == 0, submitted.stderr
    campaign = submitted.stdout.strip()

    wait_for(lambda: containers(one.name, running_only=True), 60, "a trial running on tasks-1")
    workers[one.name].kill()  # mid-trial: its container and its job are left behind
    killed = jobs_in(one.name)
    assert containers(one.name), "the killed worker's trial container"
    restarted = one.start(
        "worker", "--queues", "task", "--name", "tasks-1b", "-c", "2", name="worker-b", env=budget
    )
    fleet.wait_for_worker("tasks-1b")

    jsonl = results / f"{campaign}.jsonl"
    wait_for(
        lambda: jsonl.exists() and len(jsonl.read_text().splitlines()) >= TRIALS,
        180,
        f"{TRIALS} lines in {jsonl}",
    )
    lines = read_jsonl(jsonl)
    assert len(lines) == TRIALS
    assert len({line["job_id"] for line in lines}) == TRIALS
    assert {(line["status"], line["score"]) for line in lines} == {("ok", 1.0)}
    ran_on = {str(line["worker"]) for line in lines}
    assert {"tasks-2", "tasks-1b"} & {w.split("@")[-1] for w in ran_on}, ran_on
    assert killed, "the killed worker's trial"
    again = {str(line["job_id"]): str(line["worker"]).split("@")[-1] for line in lines}
    assert all(again[job] != one.name for job in killed), (killed, again)
    restarted.stop()
    workers[two.name].stop()
    assert containers(one.name) == [] and containers(two.name) == []

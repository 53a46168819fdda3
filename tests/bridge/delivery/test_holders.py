"""Jobs a worker holds without running them (waiting for capacity) survive its death.

Real workers on a real Redis, the stand-in `code` as VS Code: a pool of two workspaces,
seven jobs, so most jobs spend time waiting on a countdown inside a worker.
"""

from __future__ import annotations

import os
import signal
import subprocess
import time
from pathlib import Path

import redis

from evalrelay.bridge.delivery.holders import (
    declare_dead,
    hold,
    keep_alive,
    let_go,
    new_process_name,
    take_from_dead,
)
from evalrelay.bridge.keys import holders_key
from evalrelay.bridge.queue.campaigns import CampaignInfo
from evalrelay.worker.agents.templates import WorkspaceTemplate
from evalrelay.worker.agents.vscode_pool import WorkspacePool
from tests.conftest import FAST_RECOVERY, FakeVSCode, Processes, WriteFiles, wait_for
from tests.worker.providers.test_vscode import vscode_project
from tests.worker.test_tasks import collect_all, submit_campaign


def test_only_the_latest_message_lets_go_and_only_dead_processes_lose_their_jobs(
    client: redis.Redis,
) -> None:
    alive, dead = new_process_name("a@test"), new_process_name("b@test")
    keep_alive(client, alive)
    hold(client, ["job-1"], "m1", alive)
    hold(client, ["job-1"], "m2", alive)  # a later message of the same job, e.g. after a wait
    let_go(client, "job-1", "m1")  # the earlier task ending must not forget the later one
    assert client.hget(holders_key(), "job-1") == f"m2 {alive}"
    hold(client, ["job-2"], "m3", dead)
    assert take_from_dead(client) == ["job-2"]
    assert take_from_dead(client) == []  # taken once
    declare_dead(client, alive)
    assert take_from_dead(client) == ["job-1"]


def seven_jobs_on_two_workspaces(
    project: WriteFiles, tmp_path: Path, client: redis.Redis, redis_url: str,
    processes: Processes, name: str, env: dict[str, str],
) -> tuple[CampaignInfo, subprocess.Popen[bytes]]:  # fmt: skip
    """Seven 4-second jobs for a pool of two, on a worker with three slots: most jobs wait."""
    root = vscode_project(project, tmp_path, "fake-agent: delays=4", count=7)
    WorkspacePool(tmp_path / "pool").provision(2, WorkspaceTemplate.load("vscode"))
    worker = processes.worker(client, name, "-Q", "agent.vscode", "-c", "3", extra_env=env)
    return submit_campaign(redis_url, root, 7, target="copilot"), worker


def test_pool_of_two_with_a_slow_agent_completes_all_seven_jobs(
    project: WriteFiles,
    tmp_path: Path,
    client: redis.Redis,
    redis_url: str,
    processes: Processes,
    fake_vscode: FakeVSCode,
) -> None:
    """Waiting for a workspace is not a failure: no retry limit drops a job."""
    info, _ = seven_jobs_on_two_workspaces(
        project, tmp_path, client, redis_url, processes, "vscode@test", fake_vscode.env
    )
    lines = collect_all(processes, client, info, 120)
    assert [line["status"] for line in lines] == ["ok"] * 7
    assert processes.log("vscode@test").count("back to the queue") > 3
    assert client.hlen(holders_key()) == 0


def test_worker_killed_while_holding_waiting_jobs_loses_none(
    project: WriteFiles,
    tmp_path: Path,
    client: redis.Redis,
    redis_url: str,
    processes: Processes,
    fake_vscode: FakeVSCode,
) -> None:
    env = {**fake_vscode.env, **FAST_RECOVERY}
    info, doomed = seven_jobs_on_two_workspaces(
        project, tmp_path, client, redis_url, processes, "doomed@test", env
    )
    # Two jobs running, and at least one more on a countdown inside the doomed worker, with
    # nothing left on the queue's list: the waiting jobs exist only in that worker.
    wait_for(
        lambda: client.llen("agent.vscode") == 0 and client.hlen(holders_key()) >= 3,
        30,
        "jobs to wait for a workspace inside the worker",
    )
    os.killpg(doomed.pid, signal.SIGKILL)
    doomed.wait()
    killed_at = time.monotonic()

    processes.worker(client, "rescuer@test", "-Q", "agent.vscode", "-c", "3", extra_env=env)
    lines = collect_all(processes, client, info, 60)
    assert [line["status"] for line in lines] == ["ok"] * 7
    assert time.monotonic() - killed_at < 60
    said = " ".join(processes.log("rescuer@test").split())  # rich wraps long log lines
    assert "the worker holding it is gone; sending it again" in said


def test_a_job_that_never_finds_a_workspace_ends_as_timeout_at_its_deadline(
    project: WriteFiles,
    tmp_path: Path,
    client: redis.Redis,
    redis_url: str,
    processes: Processes,
    fake_vscode: FakeVSCode,
) -> None:
    root = vscode_project(project, tmp_path, "fake-agent: delays=0.1", timeout=3)
    pool = WorkspacePool(tmp_path / "pool", client)
    pool.provision(1, WorkspaceTemplate.load("vscode"))
    taken = pool.claim("someone-else", "their-request")  # held by this live process
    assert taken is not None
    processes.worker(client, "vscode@test", "-Q", "agent.vscode", extra_env=fake_vscode.env)
    info = submit_campaign(redis_url, root, 1, target="copilot")
    (line,) = collect_all(processes, client, info, 60)
    taken.release()
    assert line["status"] == "timeout"
    error = line["error"]
    assert isinstance(error, dict)
    assert str(error["message"]).startswith("nothing free to run it for 3 s: ")
    assert 3000 <= int(str(line["duration_ms"])) < 10_000
    assert client.hlen(holders_key()) == 0

"""The VS Code provider against the stand-in `code`, in-process and through real workers.

The stand-in (tests/worker/standins/code) follows VS Code's command line and the
subagent file protocol; its agent reads the request file, reads the files it lists and
answers under the temporary name before renaming it.
"""

from __future__ import annotations

import hashlib
import os
import signal
import time
from datetime import datetime
from pathlib import Path
from typing import Any

import pytest
import redis

from evalrelay.bridge.contract.job import Job
from evalrelay.bridge.results.result import Result, Status
from evalrelay.worker.agents.templates import WorkspaceTemplate
from evalrelay.worker.agents.vscode_pool import WorkspacePool
from evalrelay.worker.execute import execute
from evalrelay.worker.providers.base import NoCapacity
from tests.conftest import FakeVSCode, Processes, WriteFiles, read_jsonl, wait_for
from tests.worker.providers.agent_cases import ATTACHED, GUIDE, agent_project
from tests.worker.providers.agent_cases import planned_job as agent_job
from tests.worker.test_tasks import collect_all, submit_campaign


def targets(pool: Path, **extra: object) -> str:
    settings = ", ".join(f"{k}: {v}" for k, v in extra.items())
    return (
        "targets:\n"
        f"  - {{name: copilot, provider: vscode, subagent_root: '{pool}',\n"
        f"     focus_delay_seconds: 0, ready_timeout_seconds: 10{', ' if extra else ''}"
        f"{settings}}}\n"
    )


def vscode_project(
    project: WriteFiles,
    tmp_path: Path,
    question: str,
    timeout: float | None = None,
    count: int = 1,
    **extra: Any,
) -> Path:
    return agent_project(project, targets(tmp_path / "pool", **extra), question, timeout, count)


def planned_job(root: Path, client: redis.Redis) -> Job:
    return agent_job(root, client, "copilot")


def vscode_record(result: Result) -> dict[str, Any]:
    record: dict[str, Any] = result.artifacts["vscode"]
    return record


def test_answer_comes_back_with_the_attachments_inside_the_workspace(
    project: WriteFiles, tmp_path: Path, client: redis.Redis, fake_vscode: FakeVSCode
) -> None:
    root = vscode_project(project, tmp_path, "Review the module")
    result = execute(planned_job(root, client), "w", client)

    assert result.status is Status.OK, result.error
    record = vscode_record(result)
    request_id = record["request_id"]
    assert result.answer is not None
    assert result.answer.startswith(f"answered {request_id} in subagent-1")
    assert "request:" not in result.answer  # the echo line is checked, then stripped
    assert record["echoed_request_id"] is True
    # Guidelines first, then the other attachments, as workspace paths the agent could read;
    # the files hold the text the prompt was built from (one trailing newline removed).
    guide_sha = hashlib.sha256(b"Use four spaces.").hexdigest()
    module_sha = hashlib.sha256("print('héllo')".encode()).hexdigest()
    assert f"- inputs/{GUIDE} sha256={guide_sha}\n- inputs/{ATTACHED} sha256={module_sha}" in (
        result.answer
    )
    request = record["request"]
    assert request.index("Guidelines:") < request.index("[[ ## task ## ]]")
    assert "=== src/naïve módulo.py ===" in request  # the question transcript, as specified
    assert request.index("[[ ## task ## ]]") < request.index("[[ ## output_instructions ## ]]")
    assert "Move-Item" not in request and "PowerShell" not in request

    chats = fake_vscode.log("chat")
    assert [c["mode"] for c in chats] == ["wakeup", "evalrelay"]
    workspace = tmp_path / "pool" / "subagent-1"
    assert chats[1]["files"] == [
        str(workspace / "inputs" / GUIDE),
        str(workspace / "inputs" / ATTACHED),
        str(workspace / "messages" / f"{request_id}_req.md"),
    ]
    assert chats[1]["prompt"] == f"Follow instructions in {request_id}_req.md"
    assert all(c["window"] == str(workspace) for c in chats)
    assert not (workspace / "subagent.lock").exists()
    assert set(record["timings_ms"]) == {"prepared", "ready", "dispatched", "answered"}
    # The request, the answer and `.alive` are the protocol's, not changes of the agent's.
    assert result.workspace_changes is not None and result.workspace_changes.files == []


def test_an_open_window_is_not_woken_again(
    project: WriteFiles, tmp_path: Path, client: redis.Redis, fake_vscode: FakeVSCode
) -> None:
    root = vscode_project(project, tmp_path, "Twice")
    first = execute(planned_job(root, client), "w", client)
    second = execute(planned_job(root, client), "w", client)
    assert (first.status, second.status) == (Status.OK, Status.OK)
    assert [c["mode"] for c in fake_vscode.log("chat")] == ["wakeup", "evalrelay", "evalrelay"]
    assert vscode_record(second)["woke_window"] is False
    # Every chat was preceded by opening (focusing) its workspace.
    events = [e["event"] for e in fake_vscode.log() if e["event"] in ("open", "chat")]
    assert events == ["open", "chat"] * 3


def test_agent_that_never_answers_times_out_and_the_workspace_is_released(
    project: WriteFiles, tmp_path: Path, client: redis.Redis, fake_vscode: FakeVSCode
) -> None:
    root = vscode_project(project, tmp_path, "fake-agent: never", timeout=2)
    started = time.monotonic()
    result = execute(planned_job(root, client), "w", client)
    assert time.monotonic() - started < 6
    assert result.status is Status.TIMEOUT
    assert result.error is not None
    assert "no answer from VS Code in subagent-1" in result.error.message
    record = vscode_record(result)
    assert Path(record["request_file"]).read_text() == record["request"]
    workspace = tmp_path / "pool" / "subagent-1"
    assert not (workspace / "subagent.lock").exists()
    assert not (workspace / ".alive").exists()  # the next job probes the window again


def test_late_answer_to_an_earlier_attempt_is_ignored(
    project: WriteFiles, tmp_path: Path, client: redis.Redis, fake_vscode: FakeVSCode
) -> None:
    # First chat answers after 3 s (the job gives up at 2 s); the retry's after 5 s, so the
    # stale answer lands while the retry waits, with seconds to spare on a loaded machine.
    root = vscode_project(project, tmp_path, "fake-agent: delays=3,5", timeout=2)
    job = planned_job(root, client)
    # The window is woken first, by another task: the 2 s attempt then only chats, on
    # however loaded a machine.
    other = job.request.model_copy(update={"question": "Wake up"})
    woken = execute(job.model_copy(update={"request": other, "timeout_seconds": 30}), "w", client)
    assert woken.status is Status.OK, woken.error
    first = execute(job, "w", client)
    assert first.status is Status.TIMEOUT, first.error
    retry = execute(job.model_copy(update={"attempt": 2, "timeout_seconds": 20}), "w", client)

    assert retry.status is Status.OK, retry.error
    old_id, new_id = vscode_record(first)["request_id"], vscode_record(retry)["request_id"]
    assert old_id != new_id
    assert retry.answer is not None and retry.answer.startswith(f"answered {new_id}")
    answered = {e["request_id"]: e["time"] for e in fake_vscode.log("answered")}
    finished = datetime.fromisoformat(vscode_record(retry)["released_at"]).timestamp()
    assert answered[old_id] < answered[new_id] < finished  # the stale one landed first
    messages = tmp_path / "pool" / "subagent-1" / "messages"
    assert (messages / f"{old_id}_res.md").exists()


def test_busy_pool_sends_the_job_back_to_the_queue(
    project: WriteFiles, tmp_path: Path, client: redis.Redis, fake_vscode: FakeVSCode
) -> None:
    root = vscode_project(project, tmp_path, "Wait your turn")
    job = planned_job(root, client)
    pool = WorkspacePool(tmp_path / "pool", client)
    execute(job, "w", client)  # provisions the one workspace
    holder = pool.claim("someone-else", "r1")
    assert holder is not None
    with pytest.raises(NoCapacity, match=r"all 1 VS Code workspaces .* are busy"):
        execute(job, "w", client)
    assert holder.workspace.owner() == holder.owner
    holder.release()


def test_target_template_replaces_the_task_markdown(
    project: WriteFiles, tmp_path: Path, client: redis.Redis, fake_vscode: FakeVSCode
) -> None:
    template = tmp_path / "my template"
    template.mkdir()
    builtin = Path(__file__).parents[3] / "workspace_templates" / "vscode" / "task.md"
    (template / "task.md").write_text("# House rules apply\n\n" + builtin.read_text())
    root = vscode_project(project, tmp_path, "Custom", workspace_template=f"'{template}'")
    result = execute(planned_job(root, client), "w", client)
    assert result.status is Status.OK, result.error
    assert vscode_record(result)["request"].startswith("# House rules apply\n")


@pytest.mark.parametrize(
    ("setting", "message"),
    [
        ({"workspace_template": "/nowhere/at/all"}, "workspace template not found: /nowhere"),
        ({"executable": "no-such-code"}, "`no-such-code` was not found on this worker's PATH"),
    ],
)
def test_unusable_settings_fail_before_a_workspace_is_claimed(
    project: WriteFiles,
    tmp_path: Path,
    client: redis.Redis,
    fake_vscode: FakeVSCode,
    setting: dict[str, str],
    message: str,
) -> None:
    root = vscode_project(project, tmp_path, "Nope", **setting)
    result = execute(planned_job(root, client), "w", client)
    assert result.status is Status.INFRA_ERROR
    assert result.error is not None and message in result.error.message
    assert not (tmp_path / "pool").exists()


# Real worker processes.


def intervals(lines: list[dict[str, Any]]) -> list[tuple[str, float, float]]:
    spans = []
    for line in lines:
        record = line["artifacts"]["vscode"]
        spans.append(
            (
                record["workspace"],
                datetime.fromisoformat(record["claimed_at"]).timestamp(),
                datetime.fromisoformat(record["released_at"]).timestamp(),
            )
        )
    return sorted(spans, key=lambda s: s[1])


def test_pool_of_two_never_shares_a_workspace_and_the_third_job_waits(
    project: WriteFiles,
    tmp_path: Path,
    client: redis.Redis,
    redis_url: str,
    processes: Processes,
    fake_vscode: FakeVSCode,
) -> None:
    root = vscode_project(project, tmp_path, "fake-agent: delays=2", count=3)
    WorkspacePool(tmp_path / "pool").provision(2, WorkspaceTemplate.load("vscode"))
    # Three slots for a pool of two: the third job must wait for a workspace, off its slot.
    processes.worker(
        client, "vscode@test", "-Q", "agent.vscode", "-c", "3", extra_env=fake_vscode.env
    )
    info = submit_campaign(redis_url, root, 3, target="copilot")
    lines = collect_all(processes, client, info, 90)

    assert {line["status"] for line in lines} == {"ok"}
    spans = intervals(lines)
    for i, (name, start, end) in enumerate(spans):
        for other, other_start, other_end in spans[i + 1 :]:
            overlapping = other_start < end and start < other_end
            assert not (overlapping and other == name), spans
    assert {name for name, _, _ in spans} == {"subagent-1", "subagent-2"}
    third_start = spans[2][1]
    assert third_start >= min(end for _, _, end in spans[:2]) - 0.05  # it waited for one
    for chat in fake_vscode.log("chat"):
        if chat["request"]:
            assert Path(str(chat["request"])).parent.parent == Path(str(chat["window"]))
    assert "back to the queue" in processes.log("vscode@test")


def test_worker_killed_mid_job_its_workspace_is_reclaimed(
    project: WriteFiles,
    tmp_path: Path,
    client: redis.Redis,
    redis_url: str,
    processes: Processes,
    fake_vscode: FakeVSCode,
) -> None:
    root = vscode_project(project, tmp_path, "fake-agent: delays=60,0.5")
    env = {**fake_vscode.env, "EVALRELAY_LEASE_SECONDS": "3"}
    doomed = processes.worker(client, "doomed@test", "-Q", "agent.vscode", extra_env=env)
    info = submit_campaign(redis_url, root, 1, target="copilot")
    lock = tmp_path / "pool" / "subagent-1" / "subagent.lock"
    wait_for(lambda: fake_vscode.log("agent"), 30, "the first chat to reach the agent")
    assert lock.exists()
    os.killpg(doomed.pid, signal.SIGKILL)
    doomed.wait()

    processes.worker(client, "rescuer@test", "-Q", "agent.vscode", extra_env=env)
    (line,) = collect_all(processes, client, info, 90)
    assert line["status"] == "ok", line["error"]
    record = line["artifacts"]["vscode"]
    assert record["workspace"] == "subagent-1"
    assert record["reclaimed_from"]["pid"] == doomed.pid
    assert line["worker"] == "rescuer@test"
    assert not lock.exists()
    assert str(line["answer"]).startswith(f"answered {record['request_id']}")


def test_run_with_zero_setup_provisions_a_workspace_and_runs_every_case(
    project: WriteFiles, tmp_path: Path, processes: Processes, fake_vscode: FakeVSCode
) -> None:
    root = vscode_project(project, tmp_path, "fake-agent: delays=0.2", count=3)
    env = {**fake_vscode.env, "EVALRELAY_REDIS_URL": ""}
    run = processes.start(
        "run", str(root / "evals.yaml"), "--target", "copilot", name="run", extra_env=env
    )
    assert run.wait(120) == 0, processes.log("run")
    (jsonl,) = (root / "results").glob("*.jsonl")
    lines = read_jsonl(jsonl)
    assert [line["status"] for line in lines] == ["ok"] * 3
    assert [p.name for p in (tmp_path / "pool").iterdir() if p.is_dir()] == ["subagent-1"]

"""The `cli` provider: any command line, run without a shell, against a script of our own."""

from __future__ import annotations

import time
import uuid
from pathlib import Path
from typing import Any

import pytest
import redis

from evalrelay.bridge.results.result import Result, Status
from evalrelay.worker.execute import execute
from tests.conftest import STANDINS, WriteFiles, running_with
from tests.worker.providers.agent_cases import ATTACHED, GUIDE, agent_project, planned_job

AGENT = STANDINS / "echo_agent"


def run_cli(
    project: WriteFiles,
    client: redis.Redis,
    command: str,
    timeout: float | None = None,
    **extra: str,
) -> Result:
    settings = "".join(f"\n    {k}: {v}" for k, v in extra.items())
    targets = f"targets:\n  - name: agent\n    provider: cli\n    command: {command}{settings}\n"
    root = agent_project(project, targets, "Summarise", timeout)
    return execute(planned_job(root, client, "agent"), "w", client)


def test_answer_comes_from_the_output_file_with_each_file_one_argument(
    project: WriteFiles, client: redis.Redis
) -> None:
    result = run_cli(
        project, client, f'"{AGENT} --task {{task_file}} --out {{OUTPUT_FILE}} {{files}}"'
    )

    assert result.status is Status.OK, result.error
    record: dict[str, Any] = result.artifacts["cli"]
    workspace = Path(record["workspace"])
    assert result.answer == (
        "task starts: Before you start, read these files of this workspace, in this order:\n"
        "stdin is the task: True\n"
        f"cwd: {workspace}\n"
        f"file: {workspace / 'inputs' / GUIDE} exists=True\n"
        f"file: {workspace / 'inputs' / ATTACHED} exists=True\n"
    )
    assert record["answer_from"] == "answer.md"
    assert record["command"][-2:] == [
        str(workspace / "inputs" / GUIDE),
        str(workspace / "inputs" / ATTACHED),
    ]
    assert "answer.tmp.md" in (workspace / "task.md").read_text()
    assert record["task"] == (workspace / "task.md").read_text()  # what the agent read, kept


def test_standard_output_is_the_answer_when_no_file_is_written(
    project: WriteFiles, client: redis.Redis
) -> None:
    result = run_cli(project, client, f"[{AGENT}, --stdout, --task, '{{PROMPT_FILE}}']")
    assert result.status is Status.OK, result.error
    assert result.answer is not None and result.answer.startswith("task starts: Before you start")
    assert result.artifacts["cli"]["answer_from"] == "stdout"


def test_failing_command_is_an_infra_error_with_its_stderr(
    project: WriteFiles, client: redis.Redis
) -> None:
    result = run_cli(project, client, f'"{AGENT} --fail --task {{task_file}}"')
    assert result.status is Status.INFRA_ERROR
    assert result.error is not None
    assert result.error.message == (
        "The agent command exited with code 3; stderr: the agent broke down"
    )


def test_hung_command_is_stopped_with_its_detached_grandchild(
    project: WriteFiles, client: redis.Redis
) -> None:
    marker = f"evalrelay-orphan-{uuid.uuid4().hex}"
    started = time.monotonic()
    result = run_cli(project, client, f'"{AGENT} --hang {marker} --task {{task_file}}"', timeout=2)

    assert result.status is Status.TIMEOUT
    assert time.monotonic() - started < 10
    assert running_with(marker) == []


def test_a_detached_grandchild_is_stopped_when_the_agent_exits_normally(
    project: WriteFiles, client: redis.Redis
) -> None:
    marker = f"evalrelay-orphan-{uuid.uuid4().hex}"
    result = run_cli(project, client, f'"{AGENT} --detach {marker} --task {{task_file}}"')
    assert result.status is Status.OK, result.error
    assert running_with(marker) == []


def test_missing_executable_is_named(project: WriteFiles, client: redis.Redis) -> None:
    result = run_cli(project, client, '"no-such-agent {task_file}"')
    assert result.status is Status.INFRA_ERROR
    assert result.error is not None
    assert "`no-such-agent` was not found on this worker's PATH" in result.error.message


def test_agentv_files_format_gives_each_file_its_flag_and_log_dir_keeps_the_log(
    project: WriteFiles, client: redis.Redis, tmp_path: Path
) -> None:
    result = run_cli(
        project,
        client,
        f'"{AGENT} --task {{task_file}} {{FILES}}"',
        files_format='"--file {path}"',
        log_dir=str(tmp_path / "logs"),
        verbose="true",
    )
    assert result.status is Status.OK, result.error
    command = result.artifacts["cli"]["command"]
    assert command[-4::2] == ["--file", "--file"]
    assert [Path(p).name for p in command[-3::2]] == [Path(GUIDE).name, Path(ATTACHED).name]
    (kept,) = (tmp_path / "logs").iterdir()
    assert kept.name.endswith(".json")


def test_a_failing_healthcheck_stops_the_target_with_a_clear_error(
    project: WriteFiles, client: redis.Redis
) -> None:
    result = run_cli(
        project,
        client,
        f'"{AGENT} --task {{task_file}}"',
        healthcheck="{command_template: ['false'], timeout_seconds: 5}",  # a list, too
    )
    assert result.status is Status.INFRA_ERROR
    assert result.error is not None
    assert "target 'agent': healthcheck false exited with 1" in result.error.message


def test_a_path_inside_a_bash_script_is_filled_in_shell_quoted(
    project: WriteFiles, client: redis.Redis, monkeypatch: pytest.MonkeyPatch, private_home: Path
) -> None:
    """AgentV's targets write `bash -c '... > {OUTPUT_FILE}'`. The path is filled in as
    one shell word, so a worker home holding a quote and `$(...)` is data, not code."""
    home = private_home.parent / "it's $(touch pwned) home"
    monkeypatch.setenv("EVALRELAY_HOME", str(home))
    result = run_cli(
        project, client, "\"bash -c 'cd {workspace} && echo written by bash > {OUTPUT_FILE}'\""
    )
    assert result.status is Status.OK, result.error
    assert result.answer == "written by bash\n"
    assert result.artifacts["cli"]["answer_from"] == "answer.md"
    assert str(home) in result.artifacts["cli"]["workspace"]
    assert not list(private_home.parent.rglob("pwned")) and not Path("pwned").exists()


def test_links_the_agent_plants_are_not_followed_out_of_its_workspace(
    project: WriteFiles, client: redis.Redis, tmp_path: Path
) -> None:
    """The agent links its answer file, its transcript and a folder to host files: none
    of them reaches the result."""
    secret = tmp_path / "host" / "id_ed25519"
    secret.parent.mkdir()
    secret.write_text("PRIVATE KEY 0123\n")
    script = (
        f"ln -s {secret} {{OUTPUT_FILE}} && rm transcript.jsonl && "
        f"ln -s {secret} transcript.jsonl && ln -s {secret.parent} peek && echo printed"
    )
    result = run_cli(project, client, f"\"bash -c '{script}'\"")
    assert result.status is Status.MODEL_FAILURE, result.error
    assert result.error is not None
    assert "answer.md is (or passes through) a symbolic link" in result.error.message
    assert "PRIVATE KEY" not in result.model_dump_json()
    workspace = Path(result.artifacts["cli"]["workspace"])
    assert (workspace / "peek" / "id_ed25519").read_text() == "PRIVATE KEY 0123\n"  # it was there


def test_output_and_the_answer_file_are_cut_at_the_targets_limit(
    project: WriteFiles, client: redis.Redis
) -> None:
    """An agent printing 100 kB, and writing 100 kB of answer, under a 1,000-byte limit:
    the result keeps the beginnings and says they were cut."""
    script = (
        "head -c 100000 /dev/zero | tr '\\\\0' x; "
        "head -c 100000 /dev/zero | tr '\\\\0' y > {OUTPUT_FILE}"
    )
    result = run_cli(project, client, f'"sh -c \\"{script}\\""', output_limit_bytes="1000")
    assert result.status is Status.OK, result.error
    assert result.answer == "y" * 1000
    record: dict[str, Any] = result.artifacts["cli"]
    assert record["answer_truncated_at"] == 1000
    assert record["stdout_truncated"] is True
    sizes = {k: len(str(v)) for k, v in result.model_dump().items()}
    assert len(result.model_dump_json()) < 80_000, sizes

"""The Codex provider driving the real Codex CLI against aimock on loopback."""

from __future__ import annotations

import socket
import time
import uuid
from pathlib import Path
from typing import Any

import pytest
import redis

from evalrelay.bridge.results.result import Result, Status
from evalrelay.worker.execute import execute
from tests.conftest import Processes, WriteFiles, running_with
from tests.worker.providers import real_agents
from tests.worker.providers.agent_cases import ATTACHED, ATTACHED_TEXT, agent_project, planned_job
from tests.worker.providers.real_agents import (
    AIMOCK_KEY,
    SERVER_ERROR,
    aimock,
    reading_round_trip,
    run_against_aimock,
)
from tests.worker.test_tasks import collect_all, submit_campaign


def codex_targets(url: str) -> str:
    bin_dir = real_agents.agents_bin()
    return f"""\
targets:
  - name: codex
    provider: codex
    executable: {bin_dir / "codex"}
    model: gpt-test
    env: {{AIMOCK_API_KEY: "${{AIMOCK_KEY}}"}}
    config:
      model_provider: aimock
      model_providers.aimock:
        name: aimock on loopback
        base_url: {url}
        wire_api: responses
        env_key: AIMOCK_API_KEY
        request_max_retries: 0
        stream_max_retries: 0
"""


pytestmark = pytest.mark.usefixtures("aimock_key")


def run_codex(
    project: WriteFiles,
    tmp_path: Path,
    client: redis.Redis,
    fixtures: list[dict[str, Any]],
    question: str,
    timeout: float | None = None,
) -> Result:
    return run_against_aimock(
        project, tmp_path, client, codex_targets, "codex", fixtures, question, timeout
    )


def test_plain_answer_with_usage_and_transcript(
    project: WriteFiles, tmp_path: Path, client: redis.Redis
) -> None:
    fixtures = [{"match": {}, "response": {"content": "Four spaces it is."}}]
    result = run_codex(project, tmp_path, client, fixtures, "Indent?")

    assert result.status is Status.OK, result.error
    assert result.answer == "Four spaces it is."
    assert result.usage is not None and result.usage.input_tokens is not None
    record = result.artifacts["codex"]
    types = [event["type"] for event in record["transcript"]]
    assert types[0] == "thread.started" and types[-1] == "turn.completed"
    assert record["command"][1:4] == ["--ask-for-approval", "never", "exec"]
    assert record["command"][-1] == "-"
    workspace = Path(record["workspace"])
    assert {"AGENTS.md", "task.md", "transcript.jsonl", f"inputs/{ATTACHED}"} <= set(
        record["files"]
    )
    task = (workspace / "task.md").read_text()
    assert task.index(f"`inputs/{ATTACHED}`") < task.index("[[ ## task ## ]]")


def test_tool_round_trip_runs_a_command_in_the_workspace(
    project: WriteFiles, tmp_path: Path, client: redis.Redis
) -> None:
    fixtures = reading_round_trip("exec_command", {"cmd": f"cat '{ATTACHED}'"})
    result = run_codex(project, tmp_path, client, fixtures, "Read the module")
    # The agent's cwd is the workspace: the attachment is there under inputs/.
    assert result.status is Status.OK, result.error
    assert result.answer == "I could not read it."  # `cat src/...` from the root fails

    fixtures = reading_round_trip("exec_command", {"cmd": f"cat 'inputs/{ATTACHED}'"})
    result = run_codex(project, tmp_path, client, fixtures, "Read the module")
    assert result.status is Status.OK, result.error
    assert result.answer == "The module prints a greeting."
    (command,) = [
        e["item"]
        for e in result.artifacts["codex"]["transcript"]
        if e["type"] == "item.completed" and e["item"]["type"] == "command_execution"
    ]
    assert ATTACHED_TEXT in command["aggregated_output"] and command["exit_code"] == 0


def test_agent_that_never_finishes_is_stopped_with_every_process(
    project: WriteFiles, tmp_path: Path, client: redis.Redis
) -> None:
    marker = f"evalrelay-orphan-{uuid.uuid4().hex}"
    sleeper = {
        "toolCalls": [
            {
                "name": "exec_command",
                "arguments": {"cmd": f"python3 -c 'import time; time.sleep(600)' {marker}"},
            }
        ]
    }
    fixtures = [{"match": {}, "response": sleeper}]  # every turn asks for another sleeper
    started = time.monotonic()
    result = run_codex(project, tmp_path, client, fixtures, "Loop", timeout=6)

    assert result.status is Status.TIMEOUT
    assert result.error is not None and "stopped with all its processes" in result.error.message
    assert time.monotonic() - started < 20
    assert any(
        e["type"] == "item.started" for e in result.artifacts["codex"]["transcript"]
    )  # a sleeper did start
    assert running_with(marker) == []


def test_server_error_is_an_infra_error_with_the_agents_message(
    project: WriteFiles, tmp_path: Path, client: redis.Redis
) -> None:
    result = run_codex(project, tmp_path, client, SERVER_ERROR, "Anything")

    assert result.status is Status.INFRA_ERROR
    assert result.error is not None
    assert result.error.message.startswith("Codex CLI turn failed: ")
    assert result.artifacts["codex"]["exit_code"] == 1
    assert AIMOCK_KEY not in result.model_dump_json()


def test_codex_jobs_run_on_an_agent_codex_worker_each_in_its_own_home(
    project: WriteFiles,
    tmp_path: Path,
    client: redis.Redis,
    redis_url: str,
    processes: Processes,
    agents_bin: Path,
) -> None:
    fixtures = [{"match": {}, "response": {"content": "Done by a worker."}}]
    with aimock(agents_bin, fixtures, tmp_path) as url:
        root = agent_project(project, codex_targets(url), "Work", count=4)
        processes.worker(client, "codex@test", "-Q", "agent.codex", "-c", "2")
        info = submit_campaign(redis_url, root, 4, target="codex")
        lines = collect_all(processes, client, info, 120)

    assert [line["status"] for line in lines] == ["ok"] * 4
    assert {line["answer"] for line in lines} == {"Done by a worker."}
    records = [line["artifacts"]["codex"] for line in lines]  # type: ignore[index]
    assert len({r["workspace"] for r in records}) == 4
    homes = {r["home"] for r in records}
    assert 1 <= len(homes) <= 2  # one home per slot, reused by the slot's next job
    assert all(Path(home).name.endswith(("-1", "-2")) for home in homes)


def test_config_values_are_written_as_toml() -> None:
    from evalrelay.worker.providers.codex import toml_value

    assert toml_value({"name": "lo", "retries": 0, "on": True, "odd key": [1, "a"]}) == (
        '{name = "lo", retries = 0, on = true, "odd key" = [1, "a"]}'
    )


def test_a_closed_model_port_ends_in_seconds_with_codexs_own_message(
    project: WriteFiles, client: redis.Redis
) -> None:
    """With its default retries, Codex waits for the network for ever; the first report of a
    failed connection ends the job as an infra_error, long before its time limit."""
    with socket.socket() as probe:  # a port nothing listens on
        probe.bind(("127.0.0.1", 0))
        closed = probe.getsockname()[1]
    targets = codex_targets(f"http://127.0.0.1:{closed}/v1").replace(
        "        request_max_retries: 0\n        stream_max_retries: 0\n", ""
    )
    root = agent_project(project, targets, "Anyone there?", timeout=600)
    started = time.monotonic()
    result = execute(planned_job(root, client, "codex"), "w", client)
    assert time.monotonic() - started < 30
    assert result.status is Status.INFRA_ERROR
    assert result.error is not None
    assert result.error.message.startswith("Codex CLI could not reach its model server: ")
    assert "Connection failed" in result.error.message
    assert result.artifacts["codex"]["transcript"][-1]["type"] == "error"

"""The Copilot CLI provider driving the real GitHub Copilot CLI (offline BYOK) against aimock."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import redis

from evalrelay.bridge.results.result import Result, Status
from tests.conftest import WriteFiles
from tests.worker.providers import real_agents
from tests.worker.providers.agent_cases import ATTACHED
from tests.worker.providers.real_agents import (
    AIMOCK_KEY,
    SERVER_ERROR,
    reading_round_trip,
    run_against_aimock,
)


def copilot_targets(url: str) -> str:
    bin_dir = real_agents.agents_bin()
    return f"""\
targets:
  - name: copilot
    provider: copilot-cli
    executable: {bin_dir / "copilot"}
    model: gpt-4.1
    env:
      COPILOT_OFFLINE: "true"
      COPILOT_PROVIDER_BASE_URL: {url}
      COPILOT_PROVIDER_API_KEY: "${{AIMOCK_KEY}}"
"""


pytestmark = pytest.mark.usefixtures("aimock_key")


def run_copilot(
    project: WriteFiles,
    tmp_path: Path,
    client: redis.Redis,
    fixtures: list[dict[str, Any]],
    question: str,
    timeout: float | None = None,
) -> Result:
    return run_against_aimock(
        project, tmp_path, client, copilot_targets, "copilot", fixtures, question, timeout
    )


def test_tool_round_trip_reads_the_attachment_in_the_workspace(
    project: WriteFiles, tmp_path: Path, client: redis.Redis
) -> None:
    command = {"command": f"cat 'inputs/{ATTACHED}'", "description": "read the module"}
    fixtures = reading_round_trip("bash", command)
    result = run_copilot(project, tmp_path, client, fixtures, "Read the module")

    assert result.status is Status.OK, result.error
    assert result.answer == "The module prints a greeting."
    record = result.artifacts["copilot"]
    types = [event["type"] for event in record["transcript"]]
    assert "tool.execution_complete" in types and types[-1] == "result"
    assert not any(event.get("ephemeral") for event in record["transcript"])
    assert record["usage"]["codeChanges"]["filesModified"] == []
    assert "--allow-all-tools" in record["command"]
    assert record["command"][2].startswith("Before you start, read these files")


def test_server_error_is_an_infra_error_with_the_agents_message(
    project: WriteFiles, tmp_path: Path, client: redis.Redis
) -> None:
    result = run_copilot(project, tmp_path, client, SERVER_ERROR, "Anything")

    assert result.status is Status.INFRA_ERROR
    assert result.error is not None
    assert result.error.message.startswith("Copilot CLI exited with code 1: ")
    assert "500 boom" in result.error.message
    assert AIMOCK_KEY not in result.model_dump_json()

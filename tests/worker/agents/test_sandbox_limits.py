"""An agent going over `isolation.processes` or `memory_mb` is stopped, with all its
processes, as soon as it does, and its result says which limit: in a Docker container and
under bubblewrap, through the `cli` provider on a real job."""

from __future__ import annotations

import json
import time
import uuid

import pytest
import redis

from evalrelay.bridge.results.result import Result, Status
from evalrelay.worker.execute import execute
from tests.conftest import WriteFiles, running_with
from tests.worker.agents.sandbox_images import containers_of_this_process
from tests.worker.agents.test_sandbox import isolation_settings
from tests.worker.providers.agent_cases import agent_project, planned_job

ENGINES = ["bubblewrap", "docker"]

GROWING = (
    "import time\nheld = []\nwhile True:\n    held.append(b'x' * (4 << 20))\n    time.sleep(0.02)\n"
)
"""A process taking 4 MB every 20 ms (200 MB/s), touching every page of it."""
HOLDING = "import time; held = b'x' * (48 << 20); time.sleep(600)"
"""A process holding 48 MB."""


def run_confined(
    project: WriteFiles,
    client: redis.Redis,
    request: pytest.FixtureRequest,
    engine: str,
    script: str,
    **limits: int,
) -> tuple[Result, float]:
    """One job of a `cli` agent running `bash -c script` in the sandbox; its result and
    how long it took."""
    isolation = {**isolation_settings(engine, request), **limits}
    target = {
        "name": "agent", "provider": "cli", "command": ["bash", "-c", script],
        "runtime": "sandbox", "isolation": isolation,
    }  # fmt: skip
    root = agent_project(project, json.dumps({"targets": [target]}), "Go", timeout=60)
    started = time.monotonic()
    result = execute(planned_job(root, client, "agent"), "w", client)
    return result, time.monotonic() - started


def assert_stopped_for(result: Result, setting: str) -> None:
    assert result.status is Status.INFRA_ERROR, result
    assert result.error is not None and result.error.kind == "resource_limit", result.error
    assert f"(isolation.{setting}) and was stopped with all its processes" in result.error.message


@pytest.mark.parametrize("engine", ENGINES)
def test_a_fork_bomb_is_stopped_at_the_process_limit(
    project: WriteFiles, client: redis.Redis, request: pytest.FixtureRequest, engine: str
) -> None:
    marker = f"evalrelay-bomb-{uuid.uuid4().hex}"
    # bash, which keeps forking when a fork is refused (dash gives up at the first),
    # so the bomb is still there when the worker looks
    script = f"exec bash -c \"while :; do sh -c 'sleep 600; : {marker}' & done\""
    result, seconds = run_confined(project, client, request, engine, script, processes=40)

    said = str(result.error.message) if result.error else ""
    refused = "Resource temporarily unavailable" in said or "Cannot fork" in said
    if engine == "docker" and result.error is not None and result.error.kind != "resource_limit":
        # The container's pids cgroup refuses the forks whoever looks; its count goes with
        # the container, so a bomb that gives up between two of the worker's looks (on a
        # loaded machine) ends as its own failure, saying the forks were refused.
        assert result.status is Status.INFRA_ERROR and refused, result.error
    else:
        assert_stopped_for(result, "processes")
        assert "The agent command reached its limit of 40 processes" in str(result.error)
    assert seconds < 20  # not the job's 60 s deadline
    assert running_with(marker) == []
    if engine == "docker":
        assert containers_of_this_process() == []


@pytest.mark.parametrize("engine", ENGINES)
def test_a_process_growing_past_the_memory_limit_is_stopped(
    project: WriteFiles, client: redis.Redis, request: pytest.FixtureRequest, engine: str
) -> None:
    script = f'python3 -c "{GROWING}"'
    result, seconds = run_confined(project, client, request, engine, script, memory_mb=128)

    assert_stopped_for(result, "memory_mb")
    assert "went over its memory limit of 128 MB" in str(result.error)
    assert seconds < 20


@pytest.mark.parametrize("engine", ENGINES)
def test_processes_together_over_the_memory_limit_are_stopped(
    project: WriteFiles, client: redis.Redis, request: pytest.FixtureRequest, engine: str
) -> None:
    """Four processes of 48 MB, each well under 128 MB, together over it."""
    marker = f"evalrelay-holder-{uuid.uuid4().hex}"
    script = f'for i in 1 2 3 4; do python3 -c "{HOLDING}" {marker} & done; wait'
    result, seconds = run_confined(project, client, request, engine, script, memory_mb=128)

    assert_stopped_for(result, "memory_mb")
    assert seconds < 20
    assert running_with(marker) == []


@pytest.mark.parametrize("engine", ENGINES)
def test_an_agent_within_its_limits_is_not_stopped(
    project: WriteFiles, client: redis.Redis, request: pytest.FixtureRequest, engine: str
) -> None:
    """Ten processes at once and 48 MB under limits of 40 and 128: the answer comes back."""
    script = (
        "for i in $(seq 10); do sleep 0.5 & done; "
        f'python3 -c "{HOLDING.replace("600", "1")}"; wait; echo done within limits'
    )
    result, _ = run_confined(project, client, request, engine, script, processes=40, memory_mb=128)
    assert result.status is Status.OK, result.error
    assert result.answer == "done within limits"

"""`runtime: sandbox` in a Docker container, what bubblewrap's tests do not show: no value
of the agent's environment on any command line, the workspace the agent's own only while
it runs, the container gone after each attempt and at its deadline, and an image that is
missing named with the command that builds it."""

from __future__ import annotations

import json
import secrets
import subprocess
import threading
import time
from pathlib import Path

import psutil
import pytest
import redis

from evalrelay.bridge.results.result import Result, Status
from evalrelay.worker.agents.sandbox_image import DOCKERFILE
from evalrelay.worker.execute import execute
from tests.conftest import WriteFiles, wait_for
from tests.worker.agents.sandbox_images import containers_of_this_process
from tests.worker.providers.agent_cases import agent_project, planned_job


def run_in_docker(
    project: WriteFiles,
    client: redis.Redis,
    image: str,
    script: str,
    timeout: float = 60,
    **settings: object,
) -> Result:
    target = {
        "name": "agent", "provider": "cli", "command": ["bash", "-c", script],
        "runtime": "sandbox", "isolation": {"engine": "docker", "image": image}, **settings,
    }  # fmt: skip
    root = agent_project(project, json.dumps({"targets": [target]}), "Go", timeout=timeout)
    return execute(planned_job(root, client, "agent"), "w", client)


def test_no_value_of_the_agents_environment_is_on_a_command_line(
    project: WriteFiles,
    client: redis.Redis,
    sandbox_image: str,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The target's key reaches the agent, and neither `ps` nor `docker inspect` shows it."""
    token = "tok-" + secrets.token_hex(16)
    monkeypatch.setenv("AGENT_TOKEN", token)
    results: list[Result] = []
    job = threading.Thread(
        target=lambda: results.append(
            run_in_docker(
                project, client, sandbox_image, 'echo "token of ${#AGENT_TOKEN}"; sleep 3',
                env={"AGENT_TOKEN": "${AGENT_TOKEN}"},
            )
        )
    )  # fmt: skip
    job.start()
    try:
        wait_for(containers_of_this_process, 30, "the agent's container")
        (name,) = containers_of_this_process()
        inspect = ["docker", "inspect", "--format", "{{json .Path}} {{json .Args}}", name]
        command = subprocess.run(inspect, capture_output=True, text=True, check=True).stdout
        command_lines = [
            " ".join(p.info["cmdline"] or []) for p in psutil.process_iter(["cmdline"])
        ]
    finally:
        job.join(60)

    assert "sleep 3" in command and token not in command
    assert any("AGENT_TOKEN" in line for line in command_lines)  # `--env AGENT_TOKEN`
    assert not any(token in line for line in command_lines)
    (result,) = results
    assert result.status is Status.OK, result.error
    assert result.answer == f"token of {len(token)}"


def test_the_workspace_is_the_agents_while_it_runs_and_the_workers_after(
    project: WriteFiles, client: redis.Redis, sandbox_image: str
) -> None:
    """A root worker's agent runs as nobody: its workspace is handed to it, and back."""
    shadow = Path("/etc/shadow").stat()
    script = "id -u; stat -c %u .; echo made > made.txt; ln -s /etc/shadow link"
    result = run_in_docker(project, client, sandbox_image, script)

    assert result.status is Status.OK, result.error
    assert result.answer == "65534\n65534"
    workspace = Path(result.artifacts["cli"]["workspace"])
    for path in [workspace, workspace / "made.txt", workspace / "link", workspace / "inputs"]:
        assert path.lstat().st_uid == 0, path
    after = Path("/etc/shadow").stat()  # the link was not followed, either way
    assert (after.st_uid, after.st_gid, after.st_mode) == (
        shadow.st_uid,
        shadow.st_gid,
        shadow.st_mode,
    )


def test_at_its_deadline_the_container_is_killed_and_removed(
    project: WriteFiles, client: redis.Redis, sandbox_image: str
) -> None:
    started = time.monotonic()
    result = run_in_docker(project, client, sandbox_image, "trap '' TERM; sleep 600", timeout=2)

    assert result.status is Status.TIMEOUT, result.error
    assert time.monotonic() - started < 15
    assert containers_of_this_process() == []


def test_a_missing_image_is_named_with_the_command_that_builds_it(
    project: WriteFiles, client: redis.Redis
) -> None:
    image = f"evalrelay-no-such-image:{secrets.token_hex(4)}"
    result = run_in_docker(project, client, image, "true")

    assert result.status is Status.INFRA_ERROR
    assert result.error is not None
    assert result.error.message == (
        f"runtime: sandbox: the image {image} is not on this worker's Docker engine; build it "
        f"(docker build -t {image} - < {DOCKERFILE}) or name another in isolation.image"
    )

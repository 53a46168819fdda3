"""`runtime: sandbox` with `isolation.engine: auto` on a host whose Docker engine lacks the
sandbox image: the worker builds it from the Dockerfile it ships (on the base
`EVALRELAY_SANDBOX_BASE` names, here the tests' offline Debian root under a tag of this
test's own) and runs the agent in it; when the build cannot be made, the agent runs under
bubblewrap instead, with a warning saying why. Either way the job ends `ok`."""

from __future__ import annotations

import json
import logging
import os
import subprocess
from collections.abc import Iterator

import pytest
import redis

from evalrelay.bridge.results.result import Result, Status
from evalrelay.bridge.targets.settings import SANDBOX_IMAGE
from evalrelay.worker.agents import docker_cli, sandbox_image
from evalrelay.worker.execute import execute
from tests.conftest import WriteFiles
from tests.worker.agents.sandbox_images import base_image, docker_engine
from tests.worker.providers.agent_cases import agent_project, planned_job

SCRIPT = "if [ -e /.dockerenv ]; then echo in docker; else echo in bubblewrap; fi"
"""Docker puts /.dockerenv at a container's root; bubblewrap's root has no such file."""


def run_auto(project: WriteFiles, client: redis.Redis) -> Result:
    target = {"name": "agent", "provider": "cli", "command": ["bash", "-c", SCRIPT],
              "runtime": "sandbox", "isolation": {"engine": "auto"}}  # fmt: skip
    root = agent_project(project, json.dumps({"targets": [target]}), "Go", timeout=300)
    return execute(planned_job(root, client, "agent"), "w", client)


def docker(*argv: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["docker", *argv], capture_output=True, text=True, timeout=120)


@pytest.fixture
def own_base(monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    """The offline Debian root under a tag only this test uses, as the build's base; the
    image built on it is removed after, so every run builds it again."""
    docker_engine()
    tag = f"evalrelay-base:sandbox-build-{os.getpid()}"
    assert docker("tag", base_image(), tag).returncode == 0
    monkeypatch.setenv(sandbox_image.BASE_VARIABLE, tag)
    try:
        yield tag
    finally:
        docker("rmi", sandbox_image.built_tag())
        docker("rmi", tag)


def test_auto_builds_the_shipped_image_on_first_need_and_the_job_ends_ok(
    project: WriteFiles, client: redis.Redis, own_base: str, caplog: pytest.LogCaptureFixture
) -> None:
    assert docker("image", "inspect", SANDBOX_IMAGE).returncode != 0, (
        f"this test needs {SANDBOX_IMAGE} absent from the engine: docker rmi {SANDBOX_IMAGE}"
    )
    built = sandbox_image.built_tag()
    assert built != SANDBOX_IMAGE and docker("image", "inspect", built).returncode != 0
    caplog.set_level(logging.WARNING)

    result = run_auto(project, client)

    assert result.status is Status.OK, result.error
    assert "in docker" in result.answer
    assert docker("image", "inspect", built).returncode == 0
    assert f"building {built} on {own_base}" in caplog.text
    # A second attempt finds the image: no build.
    caplog.clear()
    assert run_auto(project, client).status is Status.OK
    assert "sandbox image:" not in caplog.text


def test_auto_falls_back_to_bubblewrap_with_a_warning_when_the_build_fails(
    project: WriteFiles,
    client: redis.Redis,
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
) -> None:
    docker_engine()
    monkeypatch.setenv(sandbox_image.BASE_VARIABLE, "evalrelay-no-such-base:none")
    docker_cli._images.discard(SANDBOX_IMAGE)
    caplog.set_level(logging.WARNING)

    result = run_auto(project, client)

    assert result.status is Status.OK, result.error
    assert "in bubblewrap" in result.answer
    [warning] = [r.getMessage() for r in caplog.records if "bubblewrap instead" in r.getMessage()]
    assert "building it on evalrelay-no-such-base:none failed (" in warning
    assert sandbox_image.BASE_VARIABLE in warning
    # The next attempt is told at once: no second build of what failed.
    caplog.clear()
    assert run_auto(project, client).status is Status.OK
    assert "sandbox image:" not in caplog.text and "bubblewrap instead" in caplog.text


def test_engine_docker_does_not_fall_back_and_says_what_to_do(
    project: WriteFiles, client: redis.Redis, monkeypatch: pytest.MonkeyPatch
) -> None:
    docker_engine()
    monkeypatch.setenv(sandbox_image.BASE_VARIABLE, "evalrelay-no-such-base:none")
    target = {"name": "agent", "provider": "cli", "command": ["true"],
              "runtime": "sandbox", "isolation": {"engine": "docker"}}  # fmt: skip
    root = agent_project(project, json.dumps({"targets": [target]}), "Go")

    result = execute(planned_job(root, client, "agent"), "w", client)

    assert result.status is Status.INFRA_ERROR
    assert result.error is not None
    assert "building it on evalrelay-no-such-base:none failed (" in result.error.message

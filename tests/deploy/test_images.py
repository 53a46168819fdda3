"""The service images as built (`service_images`): the API image imports every vendor SDK
and runs as the unprivileged user; the agent image runs each agent CLI, at the version the
agent tests pin, on Node.js 22, with git; the entry point turns a password file with
`@ / : # ?` into a Redis URL that says the same password."""

from __future__ import annotations

import os
import subprocess
import urllib.request
from pathlib import Path

from redis.connection import parse_url

from tests.conftest import free_port, wait_for
from tests.deploy.service_images import ROOT, in_image, service_images
from tests.worker.agents.sandbox_images import base_image
from tests.worker.providers.real_agents import PACKAGES

REGISTRY_BASE = "debian:bookworm-slim"
"""The Dockerfile's default BASE, what a machine with a registry pulls."""
SDKS = "import openai, anthropic, google.genai; print(openai.__version__, anthropic.__version__)"


def test_api_image_imports_every_sdk_as_an_unprivileged_user() -> None:
    image = f"evalrelay-api:{service_images()}"
    assert in_image(image, "-c", SDKS, entrypoint="python3").strip()
    assert in_image(image, "-u", entrypoint="id").strip() == "1000"
    assert "evalrelay" in in_image(image, "--version")


def test_agent_image_runs_each_agent_cli_at_the_pinned_version() -> None:
    image = f"evalrelay-agent:{service_images()}"
    for command, package in (
        ("codex", "@openai/codex"),
        ("claude", "@anthropic-ai/claude-code"),
        ("copilot", "@github/copilot"),
    ):
        said = in_image(image, "--version", entrypoint=command)
        assert PACKAGES[package] in said, f"{command} --version said {said!r}"
    assert in_image(image, "--version", entrypoint="node").startswith("v22.")
    assert in_image(image, "--version", entrypoint="git").startswith("git version")


def test_entrypoint_escapes_every_url_character_of_the_password(tmp_path: Path) -> None:
    password = 'p@ss/w:rd#?%"\\end'
    (tmp_path / "pw").write_text(password + "\n")
    (tmp_path / "pw").chmod(0o644)
    tmp_path.chmod(0o755)  # the image's user reads it
    image = f"evalrelay-api:{service_images()}"
    done = subprocess.run(
        ["docker", "run", "--rm", "--network", "none", "-v", f"{tmp_path}:/run/secrets:ro",
         "-e", "REDIS_PASSWORD_FILE=/run/secrets/pw", "-e", "REDIS_HOST=redis.example",
         "--entrypoint", "python3", image, "/usr/local/lib/evalrelay/redis_url.py",
         "--with-password"],
        capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    # Read back the way evalrelay's client reads it: redis-py's own URL parser.
    kwargs = parse_url(done.stdout)
    assert kwargs["password"] == password
    assert (kwargs["host"], kwargs["port"], kwargs["db"]) == ("redis.example", 6379, 0)


def test_flower_image_serves_flower_on_the_clusters_redis(redis_url: str) -> None:
    """Flower (the compose file's `flower` profile) connects to Redis and answers."""
    port = free_port()
    image = f"evalrelay-flower:{service_images()}"
    started = subprocess.run(
        ["docker", "run", "--detach", "--network", "host", "-e", f"EVALRELAY_REDIS_URL={redis_url}",
         image, f"--port={port}", "--address=127.0.0.1"],
        capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert started.returncode == 0, started.stderr
    container = started.stdout.strip()
    try:

        def healthy() -> bool:
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{port}/healthcheck") as answer:
                    return bool(answer.read() == b"OK")
            except OSError:
                return False

        def connected() -> bool:
            logs = subprocess.run(["docker", "logs", container], capture_output=True, text=True)
            return "Connected to redis://" in logs.stdout + logs.stderr

        wait_for(healthy, 60, "Flower to answer")
        wait_for(connected, 60, "Flower to connect to Redis")  # it answers before it does
    finally:
        subprocess.run(["docker", "rm", "--force", container], capture_output=True, timeout=60)


def test_docker_compose_build_as_written_starts_from_a_registry_base() -> None:
    """`docker-compose build` with no argument, as the README and docs/cluster.md say:
    the images start from `debian:bookworm-slim`. There is no registry here, so that name
    is given to the offline Debian root first (a stand-in for the pull); the build then
    reuses the layers of the offline-base build, and makes the three images."""
    tag = service_images()
    if subprocess.run(
        ["docker", "image", "inspect", REGISTRY_BASE], capture_output=True
    ).returncode:
        tagged = subprocess.run(["docker", "tag", base_image(), REGISTRY_BASE], capture_output=True)
        assert tagged.returncode == 0, tagged.stderr
    env = {
        **os.environ,
        "EVALRELAY_TAG": f"registry-{tag}",
        "COMPOSE_PROJECT_NAME": "evalrelay-build",
    }
    env.pop("EVALRELAY_BASE", None)
    compose = ["docker-compose", "-f", str(ROOT / "docker-compose.yml")]
    try:
        config = subprocess.run([*compose, "config"], cwd=ROOT, env=env, capture_output=True,
                                text=True, timeout=120)  # fmt: skip
        assert config.returncode == 0, config.stderr
        assert config.stdout.count(f"BASE: {REGISTRY_BASE}") == 4  # redis, api, agent, flower
        built = subprocess.run([*compose, "build"], cwd=ROOT, env=env, capture_output=True,
                               text=True, timeout=1200)  # fmt: skip
        assert built.returncode == 0, built.stdout[-3000:] + built.stderr[-3000:]
        for image in ("api", "agent"):
            assert "evalrelay" in in_image(f"evalrelay-{image}:registry-{tag}", "--version")
        redis_image = f"evalrelay-redis:registry-{tag}"
        assert "Redis server" in in_image(redis_image, "--version", entrypoint="redis-server")
    finally:
        for image in ("api", "agent", "redis", "flower"):
            subprocess.run(["docker", "rmi", f"evalrelay-{image}:registry-{tag}"],
                           capture_output=True)  # fmt: skip

"""The worker's calls to the Docker CLI for `runtime: sandbox`: is there an engine, is the
image there, where is a container's first process, was it killed for its memory, and
removing containers, its own and those a dead worker of this host left.

The CLI runs with the worker's Docker settings (`DOCKER_HOST`, its config folder), never
an agent's, so no target can point it at another engine.
"""

from __future__ import annotations

import contextlib
import logging
import os
import shutil
import socket
import subprocess
import threading
from pathlib import Path

from evalrelay.worker.agents.pids import pid_alive

log = logging.getLogger(__name__)

DOCKER_VARIABLES = (
    "DOCKER_HOST",
    "DOCKER_CONTEXT",
    "DOCKER_CONFIG",
    "DOCKER_CERT_PATH",
    "DOCKER_TLS_VERIFY",
    "DOCKER_API_VERSION",
)
"""The worker's own variables that tell the CLI which engine to talk to, and how."""
ANSWER_SECONDS = 10.0
"""How long a call to the engine may take before it counts as not answering."""
HOST_LABEL = "evalrelay.host"
PID_LABEL = "evalrelay.pid"
"""Labels of every sandbox container: the host and the worker process that started it."""

_lock = threading.Lock()
_images: set[str] = set()
_swept_for: int | None = None


def cli_environment() -> dict[str, str]:
    """The worker's Docker settings, and its config folder wherever HOME points later."""
    env = {name: os.environ[name] for name in DOCKER_VARIABLES if name in os.environ}
    env.setdefault("DOCKER_CONFIG", str(Path.home() / ".docker"))
    return env


def cli_path() -> str:
    return shutil.which("docker") or "docker"


def docker(
    *args: str, seconds: float = ANSWER_SECONDS, stdin: str | None = None
) -> subprocess.CompletedProcess[str]:
    """One call to the CLI; a CLI that is missing or hangs reads as a failed call."""
    cli = shutil.which("docker")
    if cli is None:
        return subprocess.CompletedProcess(["docker", *args], 127, "", "docker: not installed")
    try:
        return subprocess.run(
            [cli, *args], env=cli_environment(), capture_output=True, text=True,
            timeout=seconds, input=stdin,
        )  # fmt: skip
    except subprocess.TimeoutExpired:
        return subprocess.CompletedProcess([cli, *args], 124, "", f"no answer in {seconds:.0f} s")


def engine_problem() -> str | None:
    """None when an engine answers; else why not, in the CLI's words."""
    done = docker("version", "--format", "{{.Server.Version}}")
    if done.returncode == 0:
        return None
    lines = (done.stderr or done.stdout).strip().splitlines()
    return lines[-1] if lines else f"docker version exited with code {done.returncode}"


def has_image(image: str) -> bool:
    """Whether the engine holds the image; once it did, it is not asked again."""
    if image in _images:
        return True
    if docker("image", "inspect", "--format", "{{.Id}}", image).returncode != 0:
        return False
    with _lock:
        _images.add(image)
    return True


def container_pid(name: str) -> int:
    """The host pid of the container's first process; 0 before it starts or after it ends."""
    done = docker("inspect", "--format", "{{.State.Pid}}", name)
    text = done.stdout.strip()
    return int(text) if done.returncode == 0 and text.isdigit() else 0


def oom_killed(name: str) -> bool:
    """Whether the kernel killed a process of the container for its memory limit."""
    done = docker("inspect", "--format", "{{.State.OOMKilled}}", name)
    return done.returncode == 0 and done.stdout.strip() == "true"


def remove(name: str) -> None:
    """Kill the container if it still runs (SIGKILL), and remove it."""
    done = docker("rm", "--force", name, seconds=60)
    if done.returncode != 0 and "No such container" not in done.stderr:
        log.warning("container %s: not removed: %s", name, done.stderr.strip())


def labels() -> list[str]:
    """The labels that tie a container to this worker process."""
    host, pid = f"{HOST_LABEL}={socket.gethostname()}", f"{PID_LABEL}={os.getpid()}"
    return ["--label", host, "--label", pid]


def remove_dead_workers_containers() -> None:
    """Once per process: remove the containers of this host's worker processes that are
    gone (killed outright, they could not); other hosts' are theirs to remove."""
    global _swept_for
    with _lock:
        if _swept_for == os.getpid():
            return
        _swept_for = os.getpid()
    listed = docker(
        "ps", "--all", "--filter", f"label={HOST_LABEL}={socket.gethostname()}",
        "--format", f'{{{{.Names}}}} {{{{.Label "{PID_LABEL}"}}}}',
    )  # fmt: skip
    for line in listed.stdout.splitlines():
        name, _, pid = line.partition(" ")
        with contextlib.suppress(ValueError):
            if not pid_alive(int(pid)):
                remove(name)

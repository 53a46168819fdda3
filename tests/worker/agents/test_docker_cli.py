"""The worker's calls to Docker: a worker killed outright leaves its sandbox containers
running; the next worker process of the host removes them, and only them."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import uuid

from evalrelay.worker.agents.docker_cli import HOST_LABEL, PID_LABEL


def start_container(image: str, host: str, pid: int) -> str:
    name = f"evalrelay-test-{uuid.uuid4().hex[:12]}"
    labels = ["--label", f"{HOST_LABEL}={host}", "--label", f"{PID_LABEL}={pid}"]
    argv = ["docker", "run", "--detach", "--name", name, *labels, image, "sleep", "600"]
    subprocess.run(argv, check=True, capture_output=True)
    return name


def existing(names: list[str]) -> set[str]:
    listed = subprocess.run(
        ["docker", "ps", "--all", "--format", "{{.Names}}"],
        check=True, capture_output=True, text=True,
    )  # fmt: skip
    return set(listed.stdout.split()) & set(names)


def test_the_containers_of_a_dead_worker_of_this_host_are_removed(sandbox_image: str) -> None:
    gone = subprocess.Popen(["true"])
    gone.wait()  # a pid no process holds now
    host = socket.gethostname()
    dead = start_container(sandbox_image, host, gone.pid)
    alive = start_container(sandbox_image, host, os.getpid())
    elsewhere = start_container(sandbox_image, "another-host", gone.pid)
    names = [dead, alive, elsewhere]
    try:
        sweep = (
            "from evalrelay.worker.agents import docker_cli as d; "
            "d.remove_dead_workers_containers()"
        )
        subprocess.run([sys.executable, "-c", sweep], check=True, timeout=60)
        assert existing(names) == {alive, elsewhere}
    finally:
        subprocess.run(["docker", "rm", "--force", *names], capture_output=True)

"""The way out to an agent's model for a trial's container, whatever the task's network.

The relay of `runtime: sandbox` (`worker.agents.sandbox_relay`) runs in a small container
of its own, from the agent's sandbox image (it brings the Python the relay needs, which
a task's image may lack), listening on its loopback at each endpoint's port; the trial's
container joins that container's network, so the agent reaches its model server at the
address it was given, through the worker. The relay's container has no network of its own
for a `no-network` task (the endpoints are all there is), and Docker's bridge for the
others.
"""

from __future__ import annotations

import contextlib
import json
import tempfile
import uuid
from collections.abc import Iterator
from pathlib import Path

from evalrelay.worker.agents import docker_cli
from evalrelay.worker.agents.sandbox import Endpoint, relays
from evalrelay.worker.agents.sandbox_attempt import RELAY, RELAY_SOURCE
from evalrelay.worker.agents.sandbox_docker import bind_mount
from evalrelay.worker.trials.container import ContainerError


@contextlib.contextmanager
def model_relay(endpoints: list[str], image: str, no_network: bool) -> Iterator[str]:
    """The relay's container, running while the block runs; its name."""
    parsed = [Endpoint.parse(e) for e in endpoints]
    with tempfile.TemporaryDirectory(prefix="evalrelay-relay-") as scratch:
        sockets = Path(scratch) / "net"
        sockets.mkdir()
        routes = {str(e): str(sockets / f"{i}.sock") for i, e in enumerate(parsed)}
        with relays(parsed, routes):
            name = f"evalrelay-relay-{uuid.uuid4().hex[:16]}"
            done = docker_cli.docker(
                "run", "--detach", "--name", name, *docker_cli.labels(),
                "--log-driver", "none", "--pull", "never",
                *(["--network", "none"] if no_network else []),
                "--mount", bind_mount(sockets, str(sockets), True),
                "--mount", bind_mount(RELAY_SOURCE, RELAY, True),
                image, "python3", RELAY, json.dumps(routes), "--", "sleep", "infinity",
                seconds=60,
            )  # fmt: skip
            if done.returncode != 0:
                docker_cli.remove(name)
                said = (done.stderr or done.stdout).strip().splitlines()
                raise ContainerError(
                    f"the relay to the agent's model ({image}) did not start: "
                    f"{said[-1] if said else done.returncode}"
                )
            try:
                yield name
            finally:
                docker_cli.remove(name)

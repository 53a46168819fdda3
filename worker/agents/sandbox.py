"""`runtime: sandbox`: an agent attempt run out of reach of the worker.

The agent under evaluation runs commands an LLM chose, and could otherwise read the
worker's keys and configuration, other jobs' workspaces and the results, or reach Redis
and write its own grade. In the sandbox it sees its program read-only, its workspace and
agent home read-write, a private /tmp and HOME, and nothing else of the worker's files;
it runs as a user that is not the worker's, with no capability and limits on its memory
and processes; its network has nothing in it but the relay
(`worker.agents.sandbox_relay`) to the endpoints its target declares, which the worker
connects to on its behalf.

Two engines do it: a Docker container (`sandbox_docker`), or where no engine answers,
bubblewrap's namespaces (`sandbox_bubblewrap`); `isolation.engine` chooses. `auto` takes
Docker when its engine has the image or builds it (`sandbox_image`), else bubblewrap.
"""

from __future__ import annotations

import contextlib
import logging
import shutil
import socket
import tempfile
import threading
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Literal

from evalrelay.bridge.code_box import install_root
from evalrelay.bridge.targets.settings import Isolation
from evalrelay.worker.agents import docker_cli
from evalrelay.worker.agents.sandbox_attempt import Attempt, Confined, Endpoint, SandboxUnavailable
from evalrelay.worker.agents.sandbox_bubblewrap import bubblewrapped
from evalrelay.worker.agents.sandbox_docker import contained
from evalrelay.worker.agents.sandbox_image import sandbox_image
from evalrelay.worker.agents.sandbox_relay import splice

__all__ = [
    "Confined", "Endpoint", "SandboxUnavailable", "install_root", "relays", "sandboxed",
]  # fmt: skip

Engine = Literal["docker", "bubblewrap"]

log = logging.getLogger(__name__)


@contextlib.contextmanager
def sandboxed(
    argv: list[str],
    *,
    cwd: Path,
    env: dict[str, str],
    writable: Sequence[Path],
    readable: Sequence[Path],
    isolation: Isolation,
) -> Iterator[Confined]:
    """`argv` and `env` as they run in the sandbox, with the watch on its limits; the
    relays to the declared endpoints serve while the block runs. `writable`: the
    workspace and the agent's home, at their own paths; `readable`: the agent's program."""
    engine, isolation = chosen_engine(isolation)
    endpoints = [Endpoint.parse(e) for e in isolation.network]
    with tempfile.TemporaryDirectory(prefix="evalrelay-sandbox-") as scratch:
        sockets = Path(scratch) / "net"
        sockets.mkdir()
        routes = {str(e): str(sockets / f"{i}.sock") for i, e in enumerate(endpoints)}
        attempt = Attempt(
            argv, cwd, env, list(writable), list(readable), isolation,
            endpoints, routes, sockets, Path(scratch),
        )  # fmt: skip
        with relays(endpoints, routes):
            if engine == "docker":
                with contained(attempt) as confined:
                    yield confined
            else:
                yield bubblewrapped(attempt)


def chosen_engine(isolation: Isolation) -> tuple[Engine, Isolation]:
    """The target's engine, and its isolation with the image Docker runs (the default
    image built on first need: `sandbox_image`). For `auto`: Docker when an engine
    answers and has or builds the image, else bubblewrap, with a warning saying why."""
    if isolation.engine == "bubblewrap":
        return "bubblewrap", isolation
    if isolation.engine == "auto" and docker_cli.engine_problem() is not None:
        return "bubblewrap", isolation
    try:
        image = sandbox_image(isolation.image)
    except SandboxUnavailable as exc:
        if isolation.engine == "docker" or shutil.which("bwrap") is None:
            raise
        log.warning("sandbox: bubblewrap instead of Docker (isolation.engine auto): %s", exc)
        return "bubblewrap", isolation
    return "docker", isolation.model_copy(update={"image": image})


@contextlib.contextmanager
def relays(endpoints: list[Endpoint], routes: dict[str, str]) -> Iterator[None]:
    """A Unix socket per endpoint; each connection to it is joined to the endpoint."""
    servers = []
    for endpoint in endpoints:
        server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        server.bind(routes[str(endpoint)])
        server.listen(64)
        servers.append(server)
        threading.Thread(target=_accept, args=(server, endpoint), daemon=True).start()
    try:
        yield
    finally:
        for server in servers:
            server.close()


def _accept(server: socket.socket, endpoint: Endpoint) -> None:
    while True:
        try:
            client, _ = server.accept()
        except OSError:
            return  # closed: the attempt is over
        try:
            upstream = socket.create_connection((endpoint.host, endpoint.port), timeout=30)
            upstream.settimeout(None)
        except OSError:
            client.close()
            continue
        splice(client, upstream)

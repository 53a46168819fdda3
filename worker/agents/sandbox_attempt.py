"""What both sandbox engines are given, and what they give back to the runner.

`worker.agents.sandbox` chooses the engine and sets up what they share (the relays to the
declared endpoints); `sandbox_bubblewrap` and `sandbox_docker` each turn an `Attempt`
into the command line that runs it confined.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import NamedTuple

from evalrelay.bridge.targets.settings import Isolation
from evalrelay.worker.agents.runner import LimitCheck
from evalrelay.worker.agents.sandbox_relay import PROXY_PORT

SANDBOX_HOME = "/home/agent"
"""The agent's HOME inside the sandbox: empty, and gone with the attempt."""
RELAY = "/run/evalrelay-relay.py"
"""Where `sandbox_relay.py` is mounted inside the sandbox."""
RELAY_SOURCE = Path(__file__).with_name("sandbox_relay.py")


class SandboxUnavailable(RuntimeError):
    """The sandbox cannot run on this worker: no engine, no image, or a limit it cannot hold."""


class Endpoint(NamedTuple):
    host: str
    port: int

    @classmethod
    def parse(cls, text: str) -> Endpoint:
        host, _, port = text.rpartition(":")
        if not host or not port.isdigit():
            raise ValueError(f"network endpoint {text!r} is not host:port")
        return cls(host.strip("[]"), int(port))

    def __str__(self) -> str:
        return f"{self.host}:{self.port}"


class Attempt(NamedTuple):
    """One agent run to confine."""

    argv: list[str]
    cwd: Path
    env: dict[str, str]
    writable: list[Path]
    """The workspace and the agent's home, mounted read-write at their own paths."""
    readable: list[Path]
    """The agent's program and the target's `isolation.read`, read-only at their own paths."""
    isolation: Isolation
    endpoints: list[Endpoint]
    routes: dict[str, str]
    """Each declared endpoint (`host:port`) to the Unix socket the worker relays it from."""
    sockets: Path
    """The folder of those sockets, mounted read-only in the sandbox."""
    scratch: Path
    """The attempt's own folder on the worker, for the engine's files."""

    def relayed(self, python: str) -> list[str]:
        """The agent's command line, behind the relay when it declares endpoints."""
        if not self.routes:
            return self.argv
        return [python, RELAY, json.dumps(self.routes), "--", *self.argv]

    def environment(self) -> dict[str, str]:
        """HOME in the sandbox; clients that honour a proxy reach the endpoints by name
        through the relay's, the others (a local model server) at their own address and
        port."""
        env = {**self.env, "HOME": SANDBOX_HOME, "TMPDIR": "/tmp"}
        if self.endpoints:
            proxy = f"http://127.0.0.1:{PROXY_PORT}"
            direct = ",".join(sorted({e.host for e in self.endpoints if e.port >= 1024}))
            for name in ("HTTPS_PROXY", "https_proxy", "HTTP_PROXY", "http_proxy"):
                env[name] = proxy
            for name in ("NO_PROXY", "no_proxy"):
                env[name] = direct
        return env

    def named_hosts(self) -> list[str]:
        """The endpoints' host names, which resolve to the sandbox's own loopback."""
        return sorted({e.host for e in self.endpoints} - {"127.0.0.1", "localhost"})


def _nothing() -> str | None:
    return None


class Confined(NamedTuple):
    """What the runner runs: the command line and its environment, the watch on its
    limits while it runs, and what the engine saw of them once it ended."""

    argv: list[str]
    env: dict[str, str]
    limits: LimitCheck | None = None
    verdict: Callable[[], str | None] = _nothing
    """After the run: the limit the engine stopped the agent for (Docker's OOM kill), or None."""

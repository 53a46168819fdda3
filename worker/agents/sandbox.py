"""`runtime: sandbox`: an agent attempt run under bubblewrap, out of reach of the worker.

The agent under evaluation runs commands an LLM chose, and could otherwise read the
worker's keys and configuration, other jobs' workspaces and the results, or reach Redis
and write its own grade. In the sandbox it sees the system's own folders and its program
read-only, its workspace and agent home read-write, a private /tmp and HOME, and nothing
else of the worker's files; it runs as an unprivileged user in namespaces of its own,
with no capability; its network has nothing in it but the relay
(`worker.agents.sandbox_relay`) to the endpoints its target declares, which the worker
connects to on its behalf.
"""

from __future__ import annotations

import contextlib
import json
import shutil
import socket
import sys
import tempfile
import threading
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import NamedTuple

from bridge.targets.settings import Isolation
from worker.agents.sandbox_relay import PROXY_PORT, splice

SYSTEM_FOLDERS = ("/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32", "/opt")
SYSTEM_FILES = (
    "/etc/ssl",
    "/etc/ca-certificates",
    "/etc/pki",
    "/etc/alternatives",
    "/etc/ld.so.cache",
    "/etc/ld.so.conf",
    "/etc/ld.so.conf.d",
    "/etc/nsswitch.conf",
    "/etc/passwd",
    "/etc/group",
    "/etc/localtime",
    "/etc/os-release",
    "/etc/mime.types",
)
"""What of /etc a program needs (certificates, users, the linker, the time zone); the rest
of it, where a service may keep a password, stays out."""
SANDBOX_HOME = "/home/agent"
RELAY = "/run/evalrelay-relay.py"
NOBODY = "65534"


class SandboxUnavailable(RuntimeError):
    """bubblewrap is not installed on this worker."""


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


@contextlib.contextmanager
def sandboxed(
    argv: list[str],
    *,
    cwd: Path,
    env: dict[str, str],
    writable: Sequence[Path],
    readable: Sequence[Path],
    isolation: Isolation,
) -> Iterator[tuple[list[str], dict[str, str]]]:
    """`argv` and `env` as they run in the sandbox; the relays to the declared endpoints
    serve while the block runs. `writable`: the workspace and the agent's home, bound at
    their own paths; `readable`: the agent's program, with the target's `isolation.read`."""
    bwrap = shutil.which("bwrap")
    if bwrap is None:
        raise SandboxUnavailable(
            "runtime: sandbox needs bubblewrap on the worker (apt-get install bubblewrap)"
        )
    endpoints = [Endpoint.parse(e) for e in isolation.network]
    with tempfile.TemporaryDirectory(prefix="evalrelay-sandbox-") as scratch:
        control = Path(scratch)
        routes = {str(e): str(control / f"net-{i}.sock") for i, e in enumerate(endpoints)}
        hosts = control / "hosts"
        names = sorted({e.host for e in endpoints} - {"127.0.0.1", "localhost"})
        hosts.write_text("127.0.0.1 localhost " + " ".join(names) + "\n::1 localhost\n")
        with _relays(endpoints, routes):
            command = [
                bwrap,
                *_mounts(writable, [*readable, *map(Path, isolation.read)], hosts),
                "--unshare-all", "--die-with-parent", "--new-session", "--cap-drop", "ALL",
                "--uid", NOBODY, "--gid", NOBODY, "--hostname", "sandbox", "--chdir", str(cwd),
            ]  # fmt: skip
            if routes:
                python = str(Path(sys.executable).resolve())  # the relay runs on it
                prefix = str(Path(sys.base_prefix).resolve())
                relay = str(Path(__file__).with_name("sandbox_relay.py"))
                command += ["--ro-bind", scratch, scratch, "--ro-bind", prefix, prefix]
                command += ["--ro-bind", relay, RELAY]
                command += ["--", python, RELAY, json.dumps(routes), "--", *argv]
            else:
                command += ["--", *argv]
            yield command, _environment(env, endpoints)


def _mounts(writable: Sequence[Path], readable: Sequence[Path], hosts: Path) -> list[str]:
    args: list[str] = []
    for folder in SYSTEM_FOLDERS:
        source = Path(folder)
        if source.is_symlink():  # /bin -> usr/bin on a merged /usr
            args += ["--symlink", str(source.readlink()), folder]
        elif source.exists():
            args += ["--ro-bind", folder, folder]
    for name in SYSTEM_FILES:
        args += ["--ro-bind-try", name, name]
    args += ["--ro-bind", str(hosts), "/etc/hosts"]
    args += ["--proc", "/proc", "--dev", "/dev", "--tmpfs", "/tmp", "--tmpfs", SANDBOX_HOME]
    for path in readable:
        args += ["--ro-bind-try", str(path), str(path)]
    for path in writable:
        args += ["--bind", str(path), str(path)]
    return args


def _environment(env: dict[str, str], endpoints: list[Endpoint]) -> dict[str, str]:
    """HOME in the sandbox; clients that honour a proxy reach the endpoints by name through
    the relay's, the others (a local model server) at their own address and port."""
    env = {**env, "HOME": SANDBOX_HOME, "TMPDIR": "/tmp"}
    if endpoints:
        proxy = f"http://127.0.0.1:{PROXY_PORT}"
        direct = ",".join(sorted({e.host for e in endpoints if e.port >= 1024}))
        for name in ("HTTPS_PROXY", "https_proxy", "HTTP_PROXY", "http_proxy"):
            env[name] = proxy
        for name in ("NO_PROXY", "no_proxy"):
            env[name] = direct
    return env


def install_root(executable: str) -> Path:
    """The folder holding the agent's program: an npm package's whole prefix (its
    `node_modules` and `.bin`), else the program's own folder."""
    path = Path(executable).resolve()
    parts = path.parts
    if "node_modules" in parts:
        return Path(*parts[: parts.index("node_modules")])
    return path.parent


@contextlib.contextmanager
def _relays(endpoints: list[Endpoint], routes: dict[str, str]) -> Iterator[None]:
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

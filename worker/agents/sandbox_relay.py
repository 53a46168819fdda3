"""Runs inside an agent's sandbox, as its first process: the only way out to the network.

The sandbox has a network of its own with nothing in it. For each endpoint the target
declares, this listens on the sandbox's 127.0.0.1 at the endpoint's port (ports from
1024) and passes each connection through a Unix socket to the worker, which connects to
the endpoint itself; an HTTP CONNECT proxy on 127.0.0.1:PROXY_PORT reaches the same
endpoints by name (any port, 443 included). Then it runs the agent and exits with its code.

Standard library only: it runs under the worker's Python, with nothing else installed.
Usage: sandbox_relay.py ROUTES_JSON -- AGENT_ARGV...; ROUTES_JSON maps "host:port" to
the Unix socket leading there.
"""

from __future__ import annotations

import contextlib
import functools
import json
import signal
import socket
import subprocess
import sys
import threading
from collections.abc import Callable

PROXY_PORT = 3128
PRIVILEGED_PORTS = 1024


def pump(source: socket.socket, sink: socket.socket) -> None:
    try:
        while data := source.recv(65536):
            sink.sendall(data)
    except OSError:
        pass
    finally:
        for end in (source, sink):
            with contextlib.suppress(OSError):
                end.shutdown(socket.SHUT_RDWR)


def splice(client: socket.socket, upstream: socket.socket) -> None:
    """Bytes both ways between the two, until either end closes."""
    threading.Thread(target=pump, args=(client, upstream), daemon=True).start()
    threading.Thread(target=pump, args=(upstream, client), daemon=True).start()


def join(client: socket.socket, path: str) -> None:
    upstream = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        upstream.connect(path)
    except OSError:
        client.close()
        return
    splice(client, upstream)


def listen(port: int, serve: Callable[[socket.socket], None]) -> None:
    server = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    server.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    server.bind(("127.0.0.1", port))
    server.listen(64)

    def accept() -> None:
        while True:
            client, _ = server.accept()
            threading.Thread(target=serve, args=(client,), daemon=True).start()

    threading.Thread(target=accept, daemon=True).start()


def proxy(routes: dict[str, str]) -> Callable[[socket.socket], None]:
    def serve(client: socket.socket) -> None:
        head = b""
        while b"\r\n\r\n" not in head and len(head) < 16384:
            chunk = client.recv(4096)
            if not chunk:
                client.close()
                return
            head += chunk
        words = head.split(b"\r\n", 1)[0].decode("latin-1").split()
        target = words[1] if len(words) == 3 and words[0] == "CONNECT" else ""
        if target not in routes:
            client.sendall(b"HTTP/1.1 403 Forbidden\r\nContent-Length: 0\r\n\r\n")
            client.close()
            return
        client.sendall(b"HTTP/1.1 200 Connection established\r\n\r\n")
        join(client, routes[target])

    return serve


def main() -> int:
    routes: dict[str, str] = json.loads(sys.argv[1])
    argv = sys.argv[sys.argv.index("--") + 1 :]
    for endpoint, path in routes.items():
        port = int(endpoint.rsplit(":", 1)[1])
        if port >= PRIVILEGED_PORTS:
            listen(port, functools.partial(join, path=path))
    if routes:
        listen(PROXY_PORT, proxy(routes))
    agent = subprocess.Popen(argv)
    for signum in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
        signal.signal(signum, lambda n, frame: agent.send_signal(n))
    return agent.wait()


if __name__ == "__main__":
    sys.exit(main())

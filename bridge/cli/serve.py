"""`evalrelay serve`: the campaigns live in a browser, on this machine unless told otherwise.

Bound to 127.0.0.1 by default: results may hold prompts and answers nobody else should
read; beyond loopback it needs a token (`bridge.live.access`). The port is bound before
anything else starts, so a port in use is said at once.
"""

from __future__ import annotations

import contextlib
import errno
import ipaddress
import socket
from collections.abc import Iterator
from pathlib import Path

import click
import uvicorn

from evalrelay.bridge.cli.terminal import echo
from evalrelay.bridge.connection import configured_url, shown
from evalrelay.bridge.errors import EvalrelayError, PrerequisiteError
from evalrelay.bridge.evalfile.project import Project
from evalrelay.bridge.live.access import required_token
from evalrelay.bridge.live.app import create_app
from evalrelay.bridge.live.campaigns import Campaigns
from evalrelay.bridge.live.panel import live_panel
from evalrelay.bridge.live.redis_link import RedisLink
from evalrelay.bridge.live.report_cache import ReportCache, cache_folder
from evalrelay.bridge.live.steering import Steering
from evalrelay.bridge.queue.celery_queue import JobQueue, producer_app
from evalrelay.bridge.queue.embedded import evalrelay_home
from evalrelay.bridge.queue.runtime import open_runtime

DEFAULT_PORT = 8431

GRACE_SECONDS = 3
"""How long a stopping server waits for answers under way (pages polling keep a
connection open)."""


@click.command("serve")
@click.option(
    "--port",
    type=click.IntRange(0, 65535),
    default=DEFAULT_PORT,
    show_default=True,
    help="The port to listen on (0: any free one, printed at start).",
)
@click.option(
    "--host",
    default="127.0.0.1",
    show_default=True,
    help="The address to listen on; beyond loopback, every request needs the token in "
    "EVALRELAY_SERVE_TOKEN (or the file EVALRELAY_SERVE_TOKEN_FILE names).",
)
@click.option(
    "--results",
    type=click.Path(path_type=Path, file_okay=False),
    help="The results folder whose campaign files are shown too (default: the project's).",
)
def serve_command(port: int, host: str, results: Path | None) -> None:
    """Watch campaigns live in a browser: progress, workers, failures, and each report."""
    folder = (results or default_results_folder()).resolve()
    token = "" if names_loopback(host) else required_token(host)
    listener = bind(host, port)
    address = listener.getsockname()
    loopback = is_loopback(address[0])
    with contextlib.ExitStack() as stack:
        stack.callback(listener.close)
        url = stack.enter_context(redis_url())
        link = RedisLink(url)
        stack.callback(link.close)
        cache = ReportCache(stack.enter_context(cache_folder(evalrelay_home())), live_panel)
        stack.callback(cache.close)
        steering = Steering(
            link.client,
            lambda: JobQueue(producer_app(url), link.client),
            loopback=loopback,
            token=token,
        )
        app = create_app(
            Campaigns(link, folder), cache, loopback=loopback, steering=steering, token=token
        )
        echo(f"evalrelay serve: {page_url(host, address)} (Ctrl-C stops)")
        if not loopback:
            echo(
                f"listening on {address[0]}, beyond loopback: every request needs the serve "
                "token (Authorization: Bearer TOKEN, or open a page once with ?token=TOKEN)",
                err=True,
            )
        config = uvicorn.Config(
            app,
            log_level="warning",
            timeout_graceful_shutdown=GRACE_SECONDS,
            server_header=False,
        )
        # uvicorn stops on SIGINT and SIGTERM, then raises the signal again: as
        # KeyboardInterrupt here (`bridge.cli.main` makes SIGTERM one too).
        with contextlib.suppress(KeyboardInterrupt):
            uvicorn.Server(config).run(sockets=[listener])
    echo("evalrelay serve: stopped")


def default_results_folder() -> Path:
    """As `report` finds campaigns: the results folder of the project around here."""
    project = Project.containing(Path.cwd())
    return project.root / project.config.results_dir


def bind(host: str, port: int) -> socket.socket:
    """A listening socket on `host`:`port`, or an error that says what to do."""
    try:
        family, kind, proto, _, address = socket.getaddrinfo(
            host, port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE
        )[0]
    except socket.gaierror as exc:
        raise EvalrelayError(f"cannot listen on {host!r}: {exc.strerror}; pass --host") from None
    listener = socket.socket(family, kind, proto)
    listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        listener.bind(address)
        listener.listen(128)
    except OSError as exc:
        listener.close()
        if exc.errno == errno.EADDRINUSE:
            raise EvalrelayError(
                f"port {port} on {host} is in use (another `evalrelay serve`?); pass --port "
                "with another one"
            ) from None
        raise EvalrelayError(f"cannot listen on {host} port {port}: {exc.strerror}") from None
    listener.set_inheritable(False)
    return listener


def is_loopback(address: str) -> bool:
    return ipaddress.ip_address(address.split("%", 1)[0]).is_loopback


def names_loopback(host: str) -> bool:
    """Whether every address `host` names is a loopback one (checked before listening, so
    a server that would need a token never starts without one)."""
    try:
        found = socket.getaddrinfo(host, None, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE)
    except socket.gaierror:
        return True  # `bind` says the host is unknown
    return all(is_loopback(str(info[4][0])) for info in found)


def page_url(host: str, address: tuple[str, int] | tuple[str, int, int, int]) -> str:
    """The address to open: the host as given, or this machine's name for every interface."""
    ip = ipaddress.ip_address(address[0].split("%", 1)[0])
    if ip.is_unspecified:
        name = socket.gethostname()
    elif host == str(ip) or ":" in host:
        name = f"[{ip}]" if ip.version == 6 else str(ip)
    else:
        name = host
    return f"http://{name}:{address[1]}/"


@contextlib.contextmanager
def redis_url() -> Iterator[str]:
    """The URL of the Redis the other commands use, held for the server's whole life (the
    embedded one is started if need be). A cluster's Redis out of reach at start does not
    stop the server: the results folder is still shown, and Redis's campaigns once it
    answers."""
    with contextlib.ExitStack() as stack:
        try:
            url = stack.enter_context(open_runtime(worker=False)).url
        except PrerequisiteError as exc:
            configured = configured_url()
            if configured is None:
                raise
            echo(f"warning: {exc}; serving the results folder until it answers", err=True)
            url = configured
        echo(f"Redis: {shown(url)}", err=True)
        yield url

"""`evalrelay health`: is this service alive, as Redis last heard from it?

A container's or a pod's health check runs it: every worker, watcher and `collect`
service already writes a heartbeat into Redis (`bridge.delivery.holders.beat`, on Redis's
clock), so the check needs no port of its own in the service, and it fails the same way
whether the process hung, died or lost its way to Redis.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Sequence

import click
import redis
from pydantic import BaseModel

from evalrelay.bridge.cli.terminal import echo
from evalrelay.bridge.clock import now_seconds
from evalrelay.bridge.connection import URL_VARIABLE, configured_url, connect
from evalrelay.bridge.delivery.holders import ALIVE_SECONDS
from evalrelay.bridge.errors import PrerequisiteError
from evalrelay.bridge.keys import collectors_key, watchers_key, workers_key

ROLES = {"worker": workers_key, "watcher": watchers_key, "collector": collectors_key}
"""Each kind of service, to the heartbeat hash it reports in."""


class Verdict(BaseModel):
    """One named service's health: alive when its last heartbeat is recent enough."""

    role: str
    name: str
    matched: str | None  # the full name it reported under, None if never heard from
    age: float | None

    @property
    def alive(self) -> bool:
        return self.age is not None and self.age < ALIVE_SECONDS

    def line(self) -> str:
        if self.matched is None:
            return f"unhealthy: no {self.role} named {self.name} has reported to Redis"
        shown = f"{self.role} {self.matched}"
        if not self.alive:
            return (
                f"unhealthy: {shown} last reported {self.age:.0f}s ago "
                f"(alive means within {ALIVE_SECONDS:.0f}s)"
            )
        return f"ok: {shown} reported {self.age:.0f}s ago"


@click.command("health")
@click.option(
    "--worker",
    "workers",
    multiple=True,
    metavar="NAME",
    help="A worker (its `worker --name`, or the host part of it) that must be alive.",
)
@click.option(
    "--watcher",
    "watchers",
    multiple=True,
    metavar="NAME",
    help="A watcher (its `watch --name`) that must be alive.",
)
@click.option("--collector", "collectors", multiple=True, metavar="NAME",
              help="A `collect` service (its `--name`) that must be alive.")  # fmt: skip
def health_command(
    workers: tuple[str, ...], watchers: tuple[str, ...], collectors: tuple[str, ...]
) -> None:
    """Exit 0 when Redis answers and each service named reported within the last
    EVALRELAY_ALIVE_SECONDS (30 s); else exit 1 saying which did not. For health checks."""
    url = configured_url()
    if url is None:
        raise PrerequisiteError(f"set {URL_VARIABLE} to the cluster's Redis to check its services")
    client = connect(url)
    wanted = [
        *(("worker", n) for n in workers),
        *(("watcher", n) for n in watchers),
        *(("collector", n) for n in collectors),
    ]
    verdicts = [verdict(client, role, name) for role, name in wanted]
    echo("ok: Redis answers")
    for each in verdicts:
        echo(each.line(), err=not each.alive)
    if not all(each.alive for each in verdicts):
        sys.exit(1)


def verdict(client: redis.Redis, role: str, name: str) -> Verdict:
    """The freshest heartbeat of a service by that name: its full name, or either side of
    the `@` in it (Celery names a worker `name@host`)."""
    now = now_seconds(client)
    ages = {
        full: max(0.0, now - float(json.loads(raw).get("seen", 0)))
        for full, raw in client.hgetall(ROLES[role]()).items()
        if matches(str(full), name)
    }
    if not ages:
        return Verdict(role=role, name=name, matched=None, age=None)
    full = min(ages, key=lambda key: ages[key])
    return Verdict(role=role, name=name, matched=str(full), age=ages[full])


def matches(full: str, name: str) -> bool:
    return name == full or name in _sides(full)


def _sides(full: str) -> Sequence[str]:
    return full.split("@", 1) if "@" in full else ()

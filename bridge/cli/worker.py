"""`evalrelay worker`: a Celery worker that joins the cluster on `EVALRELAY_REDIS_URL`."""

from __future__ import annotations

import logging
import os
import socket
import sys

import click

from evalrelay.bridge.cli.terminal import plain_logs
from evalrelay.bridge.connection import URL_VARIABLE, configured_url, connect
from evalrelay.bridge.contract.names import QUEUES
from evalrelay.bridge.errors import PrerequisiteError

DEFAULT_CONCURRENCY = {"api": 32, "agent.codex": 2, "agent.cli": 2, "task": 8}
"""Jobs at once per queue. A `task` worker starts a trial only while the cpus and memory
of the trials on its host fit the host's (`worker.trials.capacity`)."""
"""API calls wait on the network, so one process runs many; agents run a few at a time."""


CALLS_PER_PROCESS = 64
"""API calls at once that one process's event loop keeps up with: at 128 it is bound by
one core, mostly the vendors' SDKs (`bench/api.py`, against a bare `AsyncOpenAI` loop:
0.96 at 32 and 0.74 at 128 in one process; 1.04 at 128 as two processes of 64)."""


def default_processes(queues: list[str], pool: str, concurrency: int) -> int:
    """An api worker (threads pool) gets one process per `CALLS_PER_PROCESS` calls at once,
    at most one per core it may run on; any other worker, one process (an agent's work is
    done by its own processes)."""
    if queues != ["api"] or pool != "threads":
        return 1
    return max(1, min(len(os.sched_getaffinity(0)), concurrency // CALLS_PER_PROCESS))


def default_concurrency(queue: str) -> int:
    """VS Code runs one job per workspace: as many at once as the default pools hold."""
    if queue == "agent.vscode":
        from evalrelay.worker.agents.vscode_pool import default_pool_size

        return default_pool_size()
    return DEFAULT_CONCURRENCY[queue]


@click.command("worker")
@click.option(
    "--queues",
    "-Q",
    default="api",
    show_default=True,
    help=f"Comma-separated queues to serve, of: {', '.join(QUEUES)}.",
)
@click.option(
    "--concurrency",
    "-c",
    type=click.IntRange(min=1),
    help="Jobs at once (default: 32 for api, 2 for each CLI agent queue, 8 for task (as "
    "many trials as fit the host's cpus and memory), and for agent.vscode the number of "
    "provisioned workspaces in ~/.subagent).",
)
@click.option(
    "--pool",
    "-P",
    type=click.Choice(["threads", "prefork"]),
    default="threads",
    show_default=True,
    help="prefork runs each job in a child process.",
)
@click.option(
    "--processes",
    type=click.IntRange(min=1),
    help="Worker processes, each with its own event loop and a share of --concurrency "
    f"(default: for an api worker, one per {CALLS_PER_PROCESS} jobs at once, at most one per "
    "core; else 1).",
)
@click.option("--name", "-n", help="Worker name (default: evalrelay-<queues>-<pid>@<host>).")
@click.option(
    "--loglevel",
    "-l",
    default="INFO",
    show_default=True,
    help="The least severe log lines shown: DEBUG, INFO, WARNING or ERROR.",
)
@click.option(
    "--task-events",
    "-E",
    is_flag=True,
    help="Send Celery task events from the start, for `celery events`. Flower turns them "
    "on by itself; they cost about a fifth of a quick job's time.",
)
def worker_command(
    queues: str,
    concurrency: int | None,
    pool: str,
    processes: int | None,
    name: str | None,
    loglevel: str,
    task_events: bool,
) -> None:
    """Serve jobs from the queues until stopped (Ctrl-C finishes running jobs first)."""
    url = configured_url()
    if url is None:
        raise PrerequisiteError(
            f"set {URL_VARIABLE} to the cluster's Redis; `evalrelay run` "
            "starts its own worker when no cluster is configured"
        )
    chosen = [q.strip() for q in queues.split(",") if q.strip()]
    unknown = sorted(set(chosen) - set(QUEUES))
    if unknown:
        raise click.BadParameter(f"unknown queue(s) {', '.join(unknown)}", param_hint="--queues")
    connect(url)
    count = concurrency or sum(default_concurrency(q) for q in chosen)
    processes = processes or default_processes(chosen, pool, count)
    if processes > 1:
        from evalrelay.worker.processes import run_processes

        click.echo(
            f"evalrelay worker: {processes} processes, {count} jobs at once in all "
            "(--processes 1 for one)",
            err=True,
        )
        shared = ["--queues", ",".join(chosen), "--pool", pool, "--loglevel", loglevel]
        sys.exit(run_processes([*shared, *(["-E"] if task_events else [])], count, processes,
                               name))  # fmt: skip
    plain_logs()
    logging.getLogger().setLevel(loglevel.upper())
    from celery import signals

    from evalrelay.worker.app import create_app
    from evalrelay.worker.broker import stop_if_redis_stays_away

    app = create_app(url)
    app.set_default()
    signals.worker_shutting_down.connect(
        lambda **_: stop_if_redis_stays_away(url), weak=False, dispatch_uid="stop-watch"
    )
    hostname = name or f"evalrelay-{'+'.join(chosen)}-{os.getpid()}@{socket.gethostname()}"
    app.worker_main(
        [
            "worker",
            "--queues",
            ",".join(chosen),
            "--concurrency",
            str(count),
            "--pool",
            pool,
            "--hostname",
            hostname,
            "--loglevel",
            loglevel,
            "--without-mingle",
            "--without-gossip",
            *(["--task-events"] if task_events else []),
        ]
    )

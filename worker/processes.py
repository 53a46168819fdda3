"""A worker of several processes: `evalrelay worker --processes N` starts N workers of its own.

An `api` worker runs all its calls on one event loop, and at high concurrency that loop
is bound by one core: the vendors' SDKs spend a millisecond or two of CPU per call. One
process per core, each with its loop and a share of the concurrency, uses the machine.
Each is a whole worker (its own name, heartbeat, leases and holds), so everything that
holds for one worker holds for each; this process only starts them and passes signals on.

- SIGINT and SIGTERM are passed on as they come: the first lets running jobs finish, a
  second Ctrl-C stops at once, as Celery does. SIGHUP (a closed terminal) is passed on as
  SIGTERM.
- The workers are in a process group of their own, so Ctrl-C in a terminal reaches them
  once, through this process; should it be killed outright, the kernel sends each SIGTERM.
- A worker that ends unasked (killed, or gone because Redis stayed away) stops the others
  the same way and this process exits with its code: a supervisor (Compose's restart
  policy, systemd) starts the whole worker again, as it would a worker of one process.
"""

from __future__ import annotations

import signal
import subprocess
import sys
import time
from collections.abc import Sequence
from types import FrameType

from evalrelay.bridge.queue.redis_keeper import die_with_parent
from evalrelay.bridge.secret_files import without_secret_files

POLL_SECONDS = 0.2

PASSED_ON = {
    signal.SIGINT: signal.SIGINT,
    signal.SIGTERM: signal.SIGTERM,
    signal.SIGQUIT: signal.SIGQUIT,
    signal.SIGHUP: signal.SIGTERM,
}


def shares(concurrency: int, processes: int) -> list[int]:
    """`concurrency` split as evenly as it goes over at most `processes` workers, none
    with less than one job at once."""
    count = min(concurrency, processes)
    return [concurrency // count + (1 if n < concurrency % count else 0) for n in range(count)]


def process_name(name: str | None, number: int) -> list[str]:
    """`--name` of the `number`th worker: `NAME-number@host` for a given `NAME@host`; by
    default each names itself, with its own process id."""
    if name is None:
        return []
    left, at, host = name.partition("@")
    return ["--name", f"{left}-{number}{at}{host}"]


def run_processes(
    worker_args: Sequence[str], concurrency: int, processes: int, name: str | None
) -> int:
    """Start the workers (`evalrelay worker` with `worker_args` and each its share of the
    concurrency), pass signals on to them, and wait for them all. Returns the exit code."""
    workers: list[subprocess.Popen[bytes]] = []
    stopping = False

    def pass_on(signum: int, frame: FrameType | None) -> None:
        nonlocal stopping
        stopping = True
        for worker in workers:
            if worker.poll() is None:
                worker.send_signal(PASSED_ON[signal.Signals(signum)])

    for signum in PASSED_ON:  # before any starts: a signal meanwhile reaches those started
        signal.signal(signum, pass_on)
    for number, share in enumerate(shares(concurrency, processes), start=1):
        if not stopping:
            workers.append(start_worker(
                [*worker_args, "--concurrency", str(share), *process_name(name, number)]
            ))  # fmt: skip
    code = 0
    while any(worker.poll() is None for worker in workers):
        for worker in workers:
            if worker.returncode is not None and not stopping:  # ended unasked
                code = exit_code(worker.returncode) or 1
                pass_on(signal.SIGTERM, None)
        time.sleep(POLL_SECONDS)
    return code or max((exit_code(worker.wait()) for worker in workers), default=0)


def start_worker(args: list[str]) -> subprocess.Popen[bytes]:
    """A worker of one process, in a process group of its own, that dies with this one."""
    command = [sys.executable, "-m", "evalrelay", "worker", *args, "--processes", "1"]
    return subprocess.Popen(
        command,
        stdin=subprocess.DEVNULL,
        process_group=0,
        preexec_fn=die_with_parent,
        env=without_secret_files(),  # it reads the NAME_FILEs itself
    )


def exit_code(returncode: int) -> int:
    """A shell's exit code for a process's: 128 + N for one ended by signal N."""
    return 128 - returncode if returncode < 0 else returncode

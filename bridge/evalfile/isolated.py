"""Loading an eval file in a process of its own, so that no file can stall or exhaust the
process that asked for it (the watcher, which takes every file dropped in its inbox).

The child has an address-space limit (`load_limits.memory_mb`) and a CPU limit; the parent
gives it `load_limits.seconds` of wall-clock time and kills it then, or as soon as the
parent is asked to stop. Children come from a forkserver that has imported the loader
once, so a small file costs a fork, not a new interpreter; the watcher has threads, and a
plain fork of a threaded process is not safe.
"""

from __future__ import annotations

import functools
import math
import multiprocessing
import multiprocessing.connection
import resource
import signal
import sys
import time
from collections.abc import Callable, Generator, Iterator, Sequence
from multiprocessing import forkserver
from multiprocessing.connection import Connection
from multiprocessing.process import BaseProcess
from pathlib import Path
from typing import Any

from evalrelay.bridge.errors import Diagnostic, EvalrelayError, InvalidFileError
from evalrelay.bridge.evalfile.cases import LoadedEvalFile, load_eval_file
from evalrelay.bridge.evalfile.limits import MIB, how_to_raise
from evalrelay.bridge.evalfile.project import Project
from evalrelay.bridge.private import keep_private

_context = multiprocessing.get_context("forkserver")

# The forkserver imports this module first and runs nothing of ours: it is made private
# here, or a program started on the same machine could read the keys it inherited.
keep_private()

POLL_SECONDS = 0.1
"""How often the parent checks whether it is asked to stop while a file loads."""


class LoadStopped(Exception):
    """The caller asked to stop while the file was loading; the child was killed."""


class LoadDeferred(Exception):
    """The file was taking its time while others waited; its load was stopped, to be
    tried again after them (a file's outcome, not raised)."""


GiveWay = Callable[[int, float], bool]
"""`give_way(index, seconds)`: whether the file at `index`, loading for `seconds`, should
stop and let the files waiting behind it go first."""


def prepare() -> None:
    """Start the forkserver now, so the first file dropped does not wait for it.

    It imports every `bridge` module the caller has imported: each child runs the
    caller's main script again (Python 3.11's forkserver does not keep it), and that is
    only cheap when what the script imports is there already (for `evalrelay`, every
    command)."""
    loaded = sorted(name for name in list(sys.modules) if name.startswith("evalrelay.bridge."))
    _context.set_forkserver_preload([*loaded, __name__])
    forkserver.ensure_running()


def load_isolated(
    path: Path, project: Project, stopping: Callable[[], bool] = lambda: False
) -> LoadedEvalFile:
    """`load_eval_file` in a child process bounded by the project's `load_limits`; a file
    over a limit raises InvalidFileError saying which, and how to raise it."""
    ((_, outcome),) = load_all([(path, project)], stopping)
    if isinstance(outcome, Exception):
        raise outcome
    return outcome


Outcome = LoadedEvalFile | Exception
"""A file loaded, or what `load_eval_file` would have raised (or a limit it went over)."""


def load_all(
    files: Sequence[tuple[Path, Project]],
    stopping: Callable[[], bool] = lambda: False,
    give_way: GiveWay = lambda index, seconds: False,
) -> Iterator[tuple[int, Outcome]]:
    """Each file loaded in a child process bounded by its project's `load_limits`, with
    its index, as it is done.

    One child loads the files one after another (a fork per file costs more than a small
    file's load); a file that goes over a limit ends that child, with its own outcome
    saying which, and a new child takes the files after it. Raises LoadStopped as soon
    as `stopping()`, killing the child. A file for which `give_way` says so is stopped
    with LoadDeferred as its outcome."""
    start = 0
    while start < len(files):
        start = yield from _load_some(files, start, stopping, give_way)


def _load_some(
    files: Sequence[tuple[Path, Project]],
    start: int,
    stopping: Callable[[], bool],
    give_way: GiveWay,
) -> Generator[tuple[int, Outcome], None, int]:
    """Load from `start` on in one child; the index to go on from if it had to end."""
    prepare()
    receive, send = _context.Pipe(duplex=False)
    jobs = list(files[start:])
    child = _context.Process(target=_load_in_child, args=(send, jobs), daemon=True)
    child.start()
    send.close()
    current = start
    try:
        while current < len(files):
            path, project = files[current]
            deadline = time.monotonic() + project.config.load_limits.seconds
            yielding = functools.partial(give_way, current)
            outcome, ended = _wait_for_one(
                receive, child, path, project, deadline, stopping, yielding
            )
            yield current, outcome
            current += 1
            if ended:
                break  # the child ended with this file: a new child takes the rest
        return current
    finally:
        if child.is_alive():
            child.kill()
        child.join(5)
        receive.close()


def _wait_for_one(
    receive: Connection,
    child: BaseProcess,
    path: Path,
    project: Project,
    deadline: float,
    stopping: Callable[[], bool],
    give_way: Callable[[float], bool],
) -> tuple[Outcome, bool]:
    """The file's outcome, and whether the child ended with it (killed, dead, or out of
    memory, after which it stops): a dead child's pipe reads as ready, not as empty."""
    limits = project.config.load_limits
    started = time.monotonic()
    while True:
        left = max(0.0, deadline - time.monotonic())
        ready = multiprocessing.connection.wait([receive, child.sentinel], min(POLL_SECONDS, left))
        if receive in ready:
            try:
                said = receive.recv()
                return _outcome(path, project, said), said[0] == "memory"
            except EOFError:
                pass  # it died before saying anything: say why below
        if ready:
            child.join(5)
            if stopping():  # a stop signal sent to the process group ended the child too
                raise LoadStopped(str(path))
            return _died(path, project, child.exitcode), True
        if stopping():
            raise LoadStopped(str(path))
        if give_way(time.monotonic() - started):
            child.kill()
            child.join(5)
            return LoadDeferred(str(path)), True
        if time.monotonic() >= deadline:
            child.kill()
            child.join(5)
            took = f"loading it took more than {limits.seconds:g} seconds"
            return _over(path, took, "seconds"), True


def _load_in_child(send: Connection, jobs: list[tuple[Path, Project]]) -> None:
    memory = max(project.config.load_limits.memory_mb for _, project in jobs) * MIB
    # The soft limit only: a Node.js program the loader starts for a file's JavaScript
    # lifts it (`promptfoo.functions.run_boxed`), bounded by the code box instead.
    resource.setrlimit(resource.RLIMIT_AS, (memory, resource.getrlimit(resource.RLIMIT_AS)[1]))
    for path, project in jobs:
        config = project.config
        # CPU seconds from now: the parent's clock stops a file first, unless it spins.
        cpu = (
            math.ceil(
                resource.getrusage(resource.RUSAGE_SELF).ru_utime + config.load_limits.seconds
            )
            + 1
        )
        resource.setrlimit(resource.RLIMIT_CPU, (cpu, resource.RLIM_INFINITY))
        outcome = _load_one(path, project)
        try:
            send.send(outcome)
        except MemoryError:
            send.send(("memory", None))
        if outcome[0] == "memory":
            return  # what it left behind is not worth keeping the process for


def _load_one(path: Path, project: Project) -> tuple[str, Any]:
    try:
        return ("loaded", load_eval_file(path, project))
    except InvalidFileError as exc:
        return ("invalid", exc.diagnostics)
    except EvalrelayError as exc:
        return ("error", str(exc))
    except OSError as exc:
        return ("os", (exc.errno, exc.strerror, exc.filename))
    except MemoryError:
        return ("memory", None)
    except Exception as exc:  # a file that breaks the loader is the file's problem here
        return ("crash", f"{type(exc).__name__}: {exc}")


def _outcome(path: Path, project: Project, outcome: tuple[str, Any]) -> Outcome:
    kind, value = outcome
    if kind == "loaded":
        loaded: LoadedEvalFile = value
        return loaded
    if kind == "invalid":
        return InvalidFileError(value)
    if kind == "error":
        return EvalrelayError(value)
    if kind == "os":
        return OSError(*value)
    if kind == "memory":
        return _memory(path, project)
    why = f"evalrelay could not read this file ({value}); report it"
    return InvalidFileError([Diagnostic(path, 1, 1, why)])


def _died(path: Path, project: Project, exitcode: int | None) -> InvalidFileError:
    if exitcode in (-signal.SIGXCPU, -signal.SIGKILL):
        # SIGXCPU: its CPU limit; SIGKILL: the kernel out of memory.
        limits = project.config.load_limits
        return _over(
            path,
            f"loading it used more than {limits.seconds:g} seconds of CPU (or ran out of memory)",
            "seconds",
        )
    why = f"the process loading this file ended unexpectedly (exit code {exitcode}); report it"
    return InvalidFileError([Diagnostic(path, 1, 1, why)])


def _memory(path: Path, project: Project) -> InvalidFileError:
    most = project.config.load_limits.memory_mb
    return _over(path, f"loading it needed more than {most} MB of memory", "memory_mb")


def _over(path: Path, what: str, field: str) -> InvalidFileError:
    message = f"{what}; split the file, or {how_to_raise('load_limits', field)}"
    return InvalidFileError([Diagnostic(path, 1, 1, message)])

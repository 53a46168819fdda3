"""Running a command-line agent to completion or to its deadline, and leaving nothing behind.

The agent runs in a session of its own, so its whole process group can be stopped. Its
descendants are collected before any signal is sent (a child that started a session of
its own is still found through its parent). Every process it starts also inherits a mark
in its environment, so one that detached itself (`setsid cmd &`) and was re-parented when
the agent exited is still found: no orphan outlives a job.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import tempfile
import threading
import time
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import BinaryIO, NamedTuple

import psutil
from pydantic import BaseModel

from evalrelay.worker.agents.environment import agent_environment

GRACE_SECONDS = 3.0
"""Between SIGTERM and SIGKILL when an agent is stopped."""

RUN_MARK = "EVALRELAY_AGENT_RUN"
"""The environment variable that marks every process of one agent run."""


POLL_SECONDS = 0.2
"""How often a running agent's new output is looked at."""

FatalCheck = Callable[[str], str | None]
"""Given one line of the agent's standard output: why it cannot succeed, or None."""

LimitCheck = Callable[[int], str | None]
"""Given the agent's process id, looked at while it runs: which of its limits it went
over, or None (`worker.agents.sandbox_limits`)."""


OUTPUT_BYTES = 8_000_000
"""What is kept of an agent's standard output (and error) by default: an agent printing
150 MB made a result line of that size, held whole by the worker, Redis and the
collector."""


class AgentRun(BaseModel):
    argv: list[str]
    returncode: int | None
    """None when the agent was stopped: at its deadline, or for `stopped_because`."""
    stdout: str
    stderr: str
    duration_ms: int
    stopped_because: str | None = None
    """The fatal error the agent reported, for which it was stopped before its deadline."""
    over_limit: str | None = None
    """The limit the agent went over, for which it was stopped before its deadline."""
    stdout_truncated: bool = False
    """The agent printed more than the run's `output_bytes`: `stdout` is its beginning."""

    @property
    def timed_out(self) -> bool:
        return self.returncode is None and self.stopped_because is None and not self.over_limit


def run_agent(
    argv: list[str],
    *,
    cwd: Path,
    env: dict[str, str],
    stdin_text: str | None,
    deadline: float,
    stdout_file: Path,
    fatal: FatalCheck | None = None,
    limits: LimitCheck | None = None,
    output_bytes: int = OUTPUT_BYTES,
) -> AgentRun:
    """Run until exit, `deadline` (a `time.monotonic()` value), a line of output that
    `fatal` says the agent cannot recover from, or a limit that `limits` says it went
    over; stdout also goes to a file, of which `output_bytes` are kept."""
    started = time.monotonic()
    stderr_file = stdout_file.with_suffix(".stderr.txt")
    mark = uuid.uuid4().hex
    # The reading ends are opened before the agent starts: it may remove or relink the
    # files in its workspace, and what the worker reads is what the agent printed.
    with (
        stdout_file.open("wb") as out,
        stdout_file.open("rb") as reading,
        stderr_file.open("wb") as err,
        stderr_file.open("rb") as err_reading,
    ):
        process = subprocess.Popen(
            argv,
            cwd=cwd,
            env={**env, RUN_MARK: mark},
            stdin=subprocess.PIPE if stdin_text is not None else subprocess.DEVNULL,
            stdout=out,
            stderr=err,
            start_new_session=True,
        )
        if stdin_text is not None:
            threading.Thread(
                target=_feed, args=(process, stdin_text), daemon=True, name="agent-stdin"
            ).start()
        try:
            ending = _wait(process, deadline, reading, fatal, limits)
        finally:
            stop_tree(process, mark)
        stdout, stdout_cut = _output(reading, output_bytes)
        stderr, _ = _output(err_reading, output_bytes)
    return AgentRun(
        argv=argv,
        returncode=ending.returncode,
        stopped_because=ending.stopped_because,
        over_limit=ending.over_limit,
        stdout=stdout,
        stderr=stderr,
        duration_ms=int((time.monotonic() - started) * 1000),
        stdout_truncated=stdout_cut,
    )


def _output(handle: BinaryIO, limit: int) -> tuple[str, bool]:
    """What the agent printed, from the start of the worker's own file, at most `limit`
    bytes (UTF-8, errors replaced)."""
    handle.seek(0)
    data = handle.read(limit + 1)
    text = data[:limit].decode("utf-8", errors="replace")
    if len(data) > limit:
        return text + f"\n[evalrelay: output cut at {limit} bytes]", True
    return text, False


class _Ending(NamedTuple):
    """How an agent's run ended: its exit code, or why it was stopped (neither: its deadline)."""

    returncode: int | None
    stopped_because: str | None = None
    over_limit: str | None = None


def _wait(
    process: subprocess.Popen[bytes],
    deadline: float,
    output: BinaryIO,
    fatal: FatalCheck | None,
    limits: LimitCheck | None,
) -> _Ending:
    if fatal is None and limits is None:
        try:
            return _Ending(process.wait(timeout=max(0.0, deadline - time.monotonic())))
        except subprocess.TimeoutExpired:
            return _Ending(None)
    pending = b""
    while True:
        try:
            remaining = deadline - time.monotonic()
            returncode = process.wait(timeout=max(0.0, min(POLL_SECONDS, remaining)))
        except subprocess.TimeoutExpired:
            returncode = None
        if returncode is not None:
            return _Ending(returncode)
        pending += output.read()
        *lines, pending = pending.split(b"\n")
        for line in lines:
            why = fatal(line.decode("utf-8", errors="replace")) if fatal else None
            if why is not None:
                return _Ending(None, stopped_because=why)
        over = limits(process.pid) if limits else None
        if over is not None:
            return _Ending(None, over_limit=over)
        if time.monotonic() >= deadline:
            return _Ending(None)


def stop_tree(process: subprocess.Popen[bytes], mark: str | None = None) -> None:
    """Stop the process, its group, every descendant and every process carrying `mark`:
    SIGTERM, a grace period, SIGKILL."""
    found = {p.pid: p for p in [*_descendants(process.pid), *_marked(mark)]}
    if process.poll() is None:
        found[process.pid] = psutil.Process(process.pid)
    members = list(found.values())
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(process.pid, signal.SIGTERM)
    for member in members:
        with contextlib.suppress(psutil.Error):
            member.terminate()
    _, alive = psutil.wait_procs(members, timeout=GRACE_SECONDS)
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(process.pid, signal.SIGKILL)
    for member in alive:
        with contextlib.suppress(psutil.Error):
            member.kill()
    psutil.wait_procs(alive, timeout=GRACE_SECONDS)
    with contextlib.suppress(subprocess.TimeoutExpired):
        process.wait(GRACE_SECONDS)


def _descendants(pid: int) -> list[psutil.Process]:
    try:
        return list(psutil.Process(pid).children(recursive=True))
    except psutil.Error:
        return []


def _marked(mark: str | None) -> list[psutil.Process]:
    """This user's processes whose environment carries the run's mark."""
    if mark is None:
        return []
    found = []
    for candidate in psutil.process_iter():
        with contextlib.suppress(psutil.Error):
            if candidate.environ().get(RUN_MARK) == mark:
                found.append(candidate)
    return found


def _feed(process: subprocess.Popen[bytes], text: str) -> None:
    """Write the prompt and close stdin; an agent that exits early just stops the write."""
    assert process.stdin is not None
    with contextlib.suppress(BrokenPipeError, OSError):
        process.stdin.write(text.encode("utf-8"))
        process.stdin.close()


def run_command(
    argv: list[str],
    *,
    cwd: Path,
    seconds: float,
    stdin_text: str | None,
    env: dict[str, str] | None = None,
) -> AgentRun:
    """A short command (a grader script, a transform, a healthcheck) run like an agent:
    in its own process group, stopped with everything it started after `seconds`; its
    output is kept in a scratch folder only while it runs. `env`: unless given, the clean
    environment an agent gets, none of the worker's keys or its Redis URL: a grading
    script is code a file named, which may print what it can read. Raises OSError when
    it cannot start."""
    with tempfile.TemporaryDirectory(prefix="evalrelay-command-") as scratch:
        return run_agent(
            argv,
            cwd=cwd,
            env=agent_environment() if env is None else env,
            stdin_text=stdin_text,
            deadline=time.monotonic() + seconds,
            stdout_file=Path(scratch) / "stdout.txt",
        )

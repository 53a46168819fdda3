"""Running a command-line agent to completion or to its deadline, and leaving nothing behind.

The agent runs in a session of its own, so its whole process group can be stopped. Its
descendants are collected before any signal is sent (a child that started a session of
its own is still found through its parent), and whatever is left of the group when the
agent exits is stopped too: no orphan outlives a job.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import threading
import time
from pathlib import Path

import psutil
from pydantic import BaseModel

GRACE_SECONDS = 3.0
"""Between SIGTERM and SIGKILL when an agent is stopped."""


class AgentRun(BaseModel):
    argv: list[str]
    returncode: int | None
    """None when the agent was stopped at its deadline."""
    stdout: str
    stderr: str
    duration_ms: int

    @property
    def timed_out(self) -> bool:
        return self.returncode is None


def run_agent(
    argv: list[str],
    *,
    cwd: Path,
    env: dict[str, str],
    stdin_text: str | None,
    deadline: float,
    stdout_file: Path,
) -> AgentRun:
    """Run until exit or `deadline` (a `time.monotonic()` value); stdout also goes to a file."""
    started = time.monotonic()
    stderr_file = stdout_file.with_suffix(".stderr.txt")
    with stdout_file.open("wb") as out, stderr_file.open("wb") as err:
        process = subprocess.Popen(
            argv,
            cwd=cwd,
            env=env,
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
            returncode: int | None = process.wait(timeout=max(0.0, deadline - time.monotonic()))
        except subprocess.TimeoutExpired:
            returncode = None
        finally:
            stop_tree(process)
    return AgentRun(
        argv=argv,
        returncode=returncode,
        stdout=stdout_file.read_text(encoding="utf-8", errors="replace"),
        stderr=stderr_file.read_text(encoding="utf-8", errors="replace"),
        duration_ms=int((time.monotonic() - started) * 1000),
    )


def stop_tree(process: subprocess.Popen[bytes]) -> None:
    """Stop the process, its group and every descendant: SIGTERM, a grace period, SIGKILL."""
    members = _descendants(process.pid)
    if process.poll() is None:
        members.append(psutil.Process(process.pid))
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


def _feed(process: subprocess.Popen[bytes], text: str) -> None:
    """Write the prompt and close stdin; an agent that exits early just stops the write."""
    assert process.stdin is not None
    with contextlib.suppress(BrokenPipeError, OSError):
        process.stdin.write(text.encode("utf-8"))
        process.stdin.close()

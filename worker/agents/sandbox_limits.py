"""Watching a sandboxed agent's processes against `isolation.processes` and `memory_mb`.

The kernel holds the limits (Docker's cgroup; under bubblewrap, rlimits), but a held
limit alone does not end an attempt: a fork bomb at its process limit would sit there
until the deadline, each fork refused, and an agent whose command the kernel killed for
its memory would carry on as if it had only failed. The worker looks at the sandbox's
processes while the agent runs, as it reads its output, and stops the attempt as soon as
they reach a limit, saying which one.
"""

from __future__ import annotations

import contextlib
from pathlib import Path

import psutil

MEBIBYTE = 1024 * 1024


class LimitWatch:
    """Called with the pid the worker started, on each look: which limit the sandbox's
    processes reached, or None. Each engine says which processes count, and how memory
    is seen to go over."""

    def __init__(self, processes: int, memory_mb: int) -> None:
        self.processes = processes
        self.memory_mb = memory_mb

    def __call__(self, pid: int) -> str | None:
        members = self.members(pid)
        tasks = 0
        for process in members:
            with contextlib.suppress(psutil.Error):  # it ended while being looked at
                tasks += process.num_threads()
        if tasks >= self.processes or self.forks_refused():
            return (
                f"reached its limit of {self.processes} processes and threads (isolation.processes)"
            )
        if self.memory_over(members):
            return f"went over its memory limit of {self.memory_mb} MB (isolation.memory_mb)"
        return None

    def members(self, pid: int) -> list[psutil.Process]:
        raise NotImplementedError

    def forks_refused(self) -> bool:
        """Whether the engine refused a fork at the limit (seen where it keeps count)."""
        return False

    def memory_over(self, members: list[psutil.Process]) -> bool:
        raise NotImplementedError


class TreeWatch(LimitWatch):
    """Bubblewrap's: every process under the one the worker started (that one stays
    outside the sandbox), and their resident memory together, pages they share counted in
    each: nothing else holds the total."""

    def members(self, pid: int) -> list[psutil.Process]:
        try:
            return list(psutil.Process(pid).children(recursive=True))
        except psutil.Error:
            return []

    def memory_over(self, members: list[psutil.Process]) -> bool:
        resident = 0
        for process in members:
            with contextlib.suppress(psutil.Error):
                resident += process.memory_info().rss
        return resident > self.memory_mb * MEBIBYTE


def tree(pid: int) -> list[psutil.Process]:
    """`pid` and every process under it."""
    try:
        root = psutil.Process(pid)
        return [root, *root.children(recursive=True)]
    except psutil.Error:
        return []


def oom_kills(pid: int) -> int:
    """How many processes the kernel killed in the memory cgroup of `pid` for its limit
    (cgroup v1's `memory.oom_control`, or v2's `memory.events`); 0 when it cannot tell."""
    return _cgroup_event(pid, "memory", "memory.oom_control", "memory.events", "oom_kill")


def fork_refusals(pid: int) -> int:
    """How many forks the pids cgroup of `pid` refused at its limit (`pids.events`'s
    `max`): a count that stays, where the number of processes comes and goes faster than
    a look can see."""
    return _cgroup_event(pid, "pids", "pids.events", "pids.events", "max")


def _cgroup_event(pid: int, controller: str, v1_file: str, v2_file: str, event: str) -> int:
    """A counter from an events file of the cgroup of `pid`; 0 when it cannot tell."""
    try:
        lines = Path(f"/proc/{pid}/cgroup").read_text().splitlines()
    except OSError:
        return 0
    groups = dict(line.split(":", 2)[1:] for line in lines if line.count(":") >= 2)
    v1 = next((path for names, path in groups.items() if controller in names.split(",")), None)
    if v1 is not None:
        events = Path(f"/sys/fs/cgroup/{controller}{v1}/{v1_file}")
    elif "" in groups:
        events = Path(f"/sys/fs/cgroup{groups['']}/{v2_file}")
    else:
        return 0
    with contextlib.suppress(OSError, ValueError):
        for line in events.read_text().splitlines():
            name, _, count = line.partition(" ")
            if name == event:
                return int(count)
    return 0

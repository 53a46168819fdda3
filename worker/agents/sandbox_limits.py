"""Watching a sandboxed agent's processes against `isolation.processes` and `memory_mb`.

The kernel holds the limits (Docker's cgroup; under bubblewrap, rlimits), but a held
limit alone does not end an attempt: a fork bomb at its process limit would sit there
until the deadline, each fork refused. The worker looks at the sandbox's processes while
the agent runs, as it reads its output, and stops the attempt as soon as they reach a
limit, saying which one. Memory is looked at only where no cgroup holds it (bubblewrap):
the resident memory of all the agent's processes together, pages they share counted in
each.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable

import psutil

MEBIBYTE = 1024 * 1024

Members = Callable[[int], list[psutil.Process]]
"""Given the pid the worker started, the processes that count against the sandbox's limits."""


class LimitWatch:
    """Called with the agent's pid on each look: which limit its processes reached, or None."""

    def __init__(self, members: Members, processes: int, memory_mb: int | None) -> None:
        self.members = members
        self.processes = processes
        self.memory_mb = memory_mb
        """None: the engine holds memory itself, and says when it stopped the agent."""

    def __call__(self, pid: int) -> str | None:
        tasks = resident = 0
        for process in self.members(pid):
            with contextlib.suppress(psutil.Error):  # it ended while being looked at
                tasks += process.num_threads()
                resident += process.memory_info().rss
        if tasks >= self.processes:
            return (
                f"reached its limit of {self.processes} processes and threads (isolation.processes)"
            )
        if self.memory_mb is not None and resident > self.memory_mb * MEBIBYTE:
            return f"went over its memory limit of {self.memory_mb} MB (isolation.memory_mb)"
        return None


def descendants(pid: int) -> list[psutil.Process]:
    """Every process under `pid`, not `pid` itself: bubblewrap's first process stays
    outside the sandbox."""
    try:
        return list(psutil.Process(pid).children(recursive=True))
    except psutil.Error:
        return []


def tree(pid: int) -> list[psutil.Process]:
    """`pid` and every process under it: a container's first process is in it."""
    try:
        root = psutil.Process(pid)
        return [root, *root.children(recursive=True)]
    except psutil.Error:
        return []

"""`runtime: sandbox` under bubblewrap, where no container engine answers.

The agent sees the system's own folders and its program read-only, its workspace and
agent home read-write, a private /tmp and HOME, and nothing else of the worker's files;
it runs as `nobody` in namespaces of its own (mount, PID, IPC, UTS, user, network) with no
capability, dying with the worker. Its limits are rlimits set inside the sandbox, where
its user namespace makes RLIMIT_NPROC count its own processes only: the number of
processes and threads, and each process's address space (a backstop); the watch
(`sandbox_limits`) stops the attempt when they reach the process limit or hold more
memory than `memory_mb` together. The kernel exempts root from RLIMIT_NPROC, so for a
worker running as root the watch alone holds the count, within one look (0.2 s).
"""

from __future__ import annotations

import shutil
import sys
from pathlib import Path

from evalrelay.bridge.code_box import NOBODY, mounts
from evalrelay.worker.agents.sandbox_attempt import (
    RELAY,
    RELAY_SOURCE,
    SANDBOX_HOME,
    Attempt,
    Confined,
    SandboxUnavailable,
)
from evalrelay.worker.agents.sandbox_limits import MEBIBYTE, TreeWatch

ADDRESS_SPACE_TIMES = 2
"""Each process's address space is held to this many times `isolation.memory_mb`: a
backstop for memory taken faster than the watch looks, which stops the attempt at the
limit itself; with more room than the limit, a process growing past it is seen doing so
instead of failing an allocation on its own."""


def bubblewrapped(attempt: Attempt) -> Confined:
    """The attempt's command line under bwrap, with its limits set inside."""
    bwrap, prlimit = shutil.which("bwrap"), shutil.which("prlimit")
    if bwrap is None or prlimit is None:
        raise SandboxUnavailable(
            "runtime: sandbox without Docker needs bubblewrap and prlimit on the worker "
            "(apt-get install bubblewrap util-linux), or a Docker engine"
        )
    isolation = attempt.isolation
    if isolation.cpus is not None:
        raise SandboxUnavailable(
            "isolation.cpus needs the docker engine, and none answers on this worker: "
            "bubblewrap cannot hold an agent's CPU use; start Docker or remove cpus"
        )
    hosts = attempt.scratch / "hosts"
    hosts.write_text("127.0.0.1 localhost " + " ".join(attempt.named_hosts()) + "\n::1 localhost\n")
    readable = [*attempt.readable, *map(Path, isolation.read)]
    command = [
        bwrap,
        *mounts(writable=attempt.writable, readable=readable),
        "--ro-bind", str(hosts), "/etc/hosts", "--tmpfs", SANDBOX_HOME,
        "--unshare-all", "--die-with-parent", "--new-session", "--cap-drop", "ALL",
        "--uid", NOBODY, "--gid", NOBODY, "--hostname", "sandbox", "--chdir", str(attempt.cwd),
    ]  # fmt: skip
    python = str(Path(sys.executable).resolve())  # the relay runs on the worker's Python
    if attempt.routes:
        prefix = str(Path(sys.base_prefix).resolve())
        command += ["--ro-bind", str(attempt.sockets), str(attempt.sockets)]
        command += ["--ro-bind", prefix, prefix, "--ro-bind", str(RELAY_SOURCE), RELAY]
    limits = [prlimit, f"--nproc={isolation.processes}"]
    limits += [f"--as={ADDRESS_SPACE_TIMES * isolation.memory_mb * MEBIBYTE}", "--"]
    command += ["--", *limits, *attempt.relayed(python)]
    watch = TreeWatch(isolation.processes, isolation.memory_mb)
    return Confined(command, attempt.environment(), watch)

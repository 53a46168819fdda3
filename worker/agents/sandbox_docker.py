"""`runtime: sandbox` in a Docker container: one container per attempt, gone after it.

The image brings the system; the agent's program, its workspace and home are mounted from
the worker at their own paths (only the workspace and home writable; the image itself is
read-only). It runs as a user that is not root (the worker's, or `nobody` for a root
worker, which hands it the writable folders for the attempt), with no capability, no new
privilege, a cgroup holding its memory, processes and CPU, and no network at all (`--network
none`): the declared endpoints are reached through the same relay bubblewrap uses, over
Unix sockets mounted in. A network of Docker's would put the worker's own ports (Redis)
one address away; a container with no interface has nothing to reach.

The agent's environment goes in by name (`-e NAME`, the values from the CLI's own
environment), so no value shows in `ps` or in the container's command line. The
container is not started with `--rm`: once it ends, the worker asks Docker whether the
kernel killed a process of it for its memory (while it runs, the watch reads the same
from its cgroup), then removes it (`docker rm --force`, which kills it first at a
timeout); a worker killed outright leaves its containers to the next worker process of
the host (`docker_cli.remove_dead_workers_containers`).
"""

from __future__ import annotations

import contextlib
import csv
import io
import os
import uuid
from collections.abc import Iterator
from pathlib import Path

import psutil

from evalrelay.worker.agents import docker_cli
from evalrelay.worker.agents.sandbox_attempt import (
    RELAY,
    RELAY_SOURCE,
    SANDBOX_HOME,
    Attempt,
    Confined,
)
from evalrelay.worker.agents.sandbox_limits import LimitWatch, fork_refusals, oom_kills, tree

NOBODY = 65534
"""The agent's user and group when the worker runs as root."""
CERTIFICATES = "/etc/ssl/certs"
"""The worker's certificate authorities, so the agent trusts what the worker trusts."""


@contextlib.contextmanager
def contained(attempt: Attempt) -> Iterator[Confined]:
    """The `docker run` command line of the attempt; the container is removed, and the
    writable folders are the worker's again, when the block ends."""
    image = attempt.isolation.image  # on the engine: `sandbox_image` made sure of it
    docker_cli.remove_dead_workers_containers()
    uid, gid = agent_ids()
    name = f"evalrelay-sandbox-{uuid.uuid4().hex[:16]}"
    users = _users_files(attempt.scratch, uid, gid)
    env = attempt.environment()
    env = {k: v for k, v in env.items() if k not in docker_cli.DOCKER_VARIABLES}
    argv = [
        docker_cli.cli_path(), "run", "--name", name, *docker_cli.labels(),
        "--init", "--interactive", "--pull", "never", "--log-driver", "none",
        *_confinement(attempt, uid, gid),
        *_mounts(attempt, users),
        "--workdir", str(attempt.cwd),
        *[arg for variable in env for arg in ("--env", variable)],
        image, *attempt.relayed("python3"),
    ]  # fmt: skip
    with _handed_over([*attempt.writable, attempt.sockets], uid, gid):
        try:
            yield Confined(
                argv,
                {**env, **docker_cli.cli_environment()},
                ContainerWatch(name, attempt.isolation.processes, attempt.isolation.memory_mb),
                lambda: _memory_verdict(name, attempt.isolation.memory_mb),
            )
        finally:
            docker_cli.remove(name)


def agent_ids() -> tuple[int, int]:
    """The worker's own user, unless it is root: then `nobody`."""
    uid, gid = os.getuid(), os.getgid()
    return (NOBODY, NOBODY) if uid == 0 else (uid, gid)


def _confinement(attempt: Attempt, uid: int, gid: int) -> list[str]:
    isolation = attempt.isolation
    memory = f"{isolation.memory_mb}m"
    args = [
        "--user", f"{uid}:{gid}", "--cap-drop", "ALL", "--security-opt", "no-new-privileges",
        "--read-only", "--hostname", "sandbox", "--network", "none",
        "--memory", memory, "--memory-swap", memory, "--pids-limit", str(isolation.processes),
        "--tmpfs", "/tmp:rw,exec,nosuid,nodev,mode=1777",
        "--tmpfs", f"{SANDBOX_HOME}:rw,exec,nosuid,nodev,uid={uid},gid={gid},mode=0700",
    ]  # fmt: skip
    if isolation.cpus is not None:
        args += ["--cpus", str(isolation.cpus)]
    for host in attempt.named_hosts():
        args += ["--add-host", f"{host}:127.0.0.1"]
    return args


def _mounts(attempt: Attempt, users: tuple[Path, Path]) -> list[str]:
    passwd, group = users
    binds = [(passwd, "/etc/passwd", True), (group, "/etc/group", True)]
    # A root worker's folders are under /root, which an image keeps to root (0700, and
    # Docker gives a tmpfs there the same mode): an empty folder of the attempt's, that
    # the agent may pass through but not write, leads it to those mounted there.
    passage = attempt.scratch / "root"
    passage.mkdir(mode=0o755, exist_ok=True)
    binds.append((passage, "/root", False))
    if Path(CERTIFICATES).is_dir():
        binds.append((Path(CERTIFICATES), CERTIFICATES, True))
    readable = [*attempt.readable, *map(Path, attempt.isolation.read)]
    binds += [(path, str(path), True) for path in readable if path.exists()]
    binds += [(path, str(path), False) for path in attempt.writable]
    if attempt.routes:
        binds += [(attempt.sockets, str(attempt.sockets), True), (RELAY_SOURCE, RELAY, True)]
    return [arg for bind in binds for arg in ("--mount", bind_mount(*bind))]


def bind_mount(source: Path, target: str, readonly: bool) -> str:
    """A `--mount` value: CSV, so a path holding a comma or a quote stays one field."""
    fields = ["type=bind", f"source={source}", f"target={target}"]
    out = io.StringIO()
    csv.writer(out, lineterminator="").writerow([*fields, *(["readonly"] if readonly else [])])
    return out.getvalue()


def _users_files(scratch: Path, uid: int, gid: int) -> tuple[Path, Path]:
    """/etc/passwd and /etc/group naming the agent's user, whatever the image holds:
    programs that look their user up (Node's `os.userInfo()`) find one."""
    passwd, group = scratch / "passwd", scratch / "group"
    passwd.write_text(
        "root:x:0:0:root:/root:/usr/sbin/nologin\n"
        f"agent:x:{uid}:{gid}:agent:{SANDBOX_HOME}:/bin/sh\n"
    )
    group.write_text(f"root:x:0:\nagent:x:{gid}:\n")
    return passwd, group


@contextlib.contextmanager
def _handed_over(folders: list[Path], uid: int, gid: int) -> Iterator[None]:
    """The folders the agent writes, owned by its user while it runs, then by their owner
    again. Only a root worker's agent has a user of its own; symbolic links are changed,
    never followed."""
    if os.getuid() != 0:
        yield
        return
    owners = {folder: (folder.stat().st_uid, folder.stat().st_gid) for folder in folders}
    for folder in folders:
        _chown_tree(folder, uid, gid)
    try:
        yield
    finally:
        for folder, (owner, group) in owners.items():
            _chown_tree(folder, owner, group)


def _chown_tree(folder: Path, uid: int, gid: int) -> None:
    os.chown(folder, uid, gid, follow_symlinks=False)
    for parent, folders, files in os.walk(folder):
        for name in [*folders, *files]:
            with contextlib.suppress(FileNotFoundError):
                os.chown(os.path.join(parent, name), uid, gid, follow_symlinks=False)


class ContainerWatch(LimitWatch):
    """The container's processes, found from its first one once it has started (the
    worker must share the host's process IDs, as a worker on the host does); its memory is
    its cgroup's, which went over when the kernel killed a process for it."""

    def __init__(self, name: str, processes: int, memory_mb: int) -> None:
        super().__init__(processes, memory_mb)
        self.name = name
        self.pid = 0

    def members(self, pid: int) -> list[psutil.Process]:
        if not self.pid:
            self.pid = docker_cli.container_pid(self.name)
        return tree(self.pid) if self.pid else []

    def memory_over(self, members: list[psutil.Process]) -> bool:
        return bool(self.pid) and oom_kills(self.pid) > 0

    def forks_refused(self) -> bool:
        return bool(self.pid) and fork_refusals(self.pid) > 0


def _memory_verdict(name: str, memory_mb: int) -> str | None:
    if docker_cli.oom_killed(name):
        return f"went over its memory limit of {memory_mb} MB (isolation.memory_mb)"
    return None

"""One trial's container, through the worker's Docker CLI (`worker.agents.docker_cli`).

The container's first process is `sleep infinity`: it only keeps the container up while
the worker runs the agent and the tests in it with `docker exec`. Such a process ignores
SIGTERM, so the container is removed with `docker rm --force` (SIGKILL) and never waited
for. Every container carries the labels of its host and worker process, so the next
worker of a host removes those a dead worker left (`docker_cli.remove_dead_workers_containers`).

Files go in and out as tar streams (`docker cp -`), keeping their modes; an environment's
variables go to `docker exec` by name, their values in the CLI's own environment, so none
shows on the host's command lines.
"""

from __future__ import annotations

import os
import re
import subprocess
import time
import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from evalrelay.bridge.evalfile.harbor.config import EnvironmentConfig
from evalrelay.worker.agents import docker_cli
from evalrelay.worker.agents.sandbox_docker import bind_mount


def host_cpus() -> float:
    """Docker refuses `--cpus` past the host's: a task asking more gets all of them."""
    return float(os.cpu_count() or 1)


WORKER_LABEL = "evalrelay.worker"
JOB_LABEL = "evalrelay.job"
CANNOT_RUN = "OCI runtime exec failed"
"""How `docker exec` says the program is not in the container (exit code 126 or 127)."""
KILL_SECONDS = 10.0
"""How long the clean-up of an overrun command may take (`kill -9 -1` in the container)."""


class ContainerError(Exception):
    """Raised when Docker cannot start the container or move files in or out of it."""


@dataclass(frozen=True)
class Ran:
    """A command's exit code and output (standard error after standard output)."""

    code: int
    output: str
    timed_out: bool
    seconds: float
    stdout: str = ""


LOG_FOLDERS = ("/logs/agent", "/logs/verifier", "/logs/artifacts")
"""Made before the first command runs, as Harbor's mounts make them."""


class TrialContainer:
    def __init__(self, name: str) -> None:
        self.name = name
        self.fresh = True
        """No command has run yet: the log folders are still to make."""

    @classmethod
    def start(
        cls,
        image: str,
        env: EnvironmentConfig,
        workdir: str | None,
        labels: dict[str, str],
        readable: Sequence[Path] = (),
        network_of: str | None = None,
    ) -> TrialContainer:
        """The container, running, with the task's limits, network policy and variables;
        `readable`: the worker's folders it may read, at their own paths; `network_of`:
        a container whose network it joins (the relay to an agent's model, which keeps
        the task's policy), instead of a network of its own."""
        name = f"evalrelay-trial-{uuid.uuid4().hex[:16]}"
        args = [
            "run", "--detach", "--name", name, *docker_cli.labels(),
            *[a for k, v in labels.items() for a in ("--label", f"{k}={v}")],
            "--log-driver", "none", "--pull", "never", "--entrypoint", "sleep",
        ]  # fmt: skip
        if env.cpus is not None:
            args += ["--cpus", f"{min(env.cpus, host_cpus()):g}"]
        if env.memory_mb is not None:
            args += ["--memory", f"{env.memory_mb}m"]
        if network_of is not None:
            args += ["--network", f"container:{network_of}"]
        elif env.network == "no-network":
            args += ["--network", "none"]
        for folder in readable:
            args += ["--mount", bind_mount(folder, str(folder), True)]
        if workdir:
            args += ["--workdir", workdir]
        values = expanded(env.env)
        args += [a for name_ in values for a in ("--env", name_)]
        done = _cli([*args, image, "infinity"], values, seconds=60)
        if done.returncode != 0:
            docker_cli.remove(name)
            raise ContainerError(f"docker run {image}: {_said(done)}")
        return cls(name)

    def run(
        self,
        command: str,
        seconds: float,
        env: dict[str, str] | None = None,
        user: str | None = None,
        workdir: str | None = None,
    ) -> Ran:
        """`bash -c command` in the container, stopped (with every process it started) at
        `seconds`. The first command (as root) makes the log folders on its way: one
        `docker exec` fewer per trial."""
        if self.fresh and not user:
            self.fresh = False
            command = f"mkdir -p {' '.join(LOG_FOLDERS)} && {command}"
        return self.run_argv(["bash", "-c", command], seconds, env, user, workdir)

    def run_argv(
        self,
        argv: list[str],
        seconds: float,
        env: dict[str, str] | None = None,
        user: str | None = None,
        workdir: str | None = None,
        stdin: str | None = None,
    ) -> Ran:
        """`argv` in the container (`stdin` its input, else none), stopped with every
        process it started at `seconds`; ContainerError when the container cannot run it
        at all (no such program: a task's image without bash)."""
        if self.fresh:
            self.run(":", 60)
        env = env or {}
        args = ["exec", *(["--interactive"] if stdin is not None else [])]
        args += [a for name in env for a in ("--env", name)]
        if user:
            args += ["--user", user]
        if workdir:
            args += ["--workdir", workdir]
        began = time.monotonic()
        try:
            done = _cli([*args, self.name, *argv], env, seconds=seconds, stdin=stdin)
        except subprocess.TimeoutExpired as exc:
            self.kill_commands()
            stdout = _text(exc.stdout)
            return Ran(-1, stdout + _text(exc.stderr), True, time.monotonic() - began, stdout)
        output = done.stdout + done.stderr
        if done.returncode in (126, 127) and CANNOT_RUN in output:
            raise ContainerError(f"the container cannot run {argv[0]}: {output.strip()[-300:]}")
        return Ran(done.returncode, output, False, time.monotonic() - began, done.stdout)

    def kill_commands(self) -> None:
        """Every process but the first (`kill -9 -1` spares the caller and PID 1)."""
        # bash's own kill: an image may have no kill program
        _cli(["exec", self.name, "bash", "-c", "kill -9 -1"], {}, seconds=KILL_SECONDS, check=False)

    def put(self, tar: bytes, folder: str) -> None:
        """Unpack a tar stream into `folder` of the container (which must exist)."""
        done = subprocess.run(
            [docker_cli.cli_path(), "cp", "-", f"{self.name}:{folder}"],
            input=tar, capture_output=True, env=docker_cli.cli_environment(), timeout=120,
        )  # fmt: skip
        if done.returncode != 0:
            raise ContainerError(f"docker cp into {folder}: {_text(done.stderr).strip()}")

    def get(self, path: str) -> bytes | None:
        """A tar stream of `path` in the container; None when it is not there."""
        done = subprocess.run(
            [docker_cli.cli_path(), "cp", f"{self.name}:{path}", "-"],
            capture_output=True, env=docker_cli.cli_environment(), timeout=120,
        )  # fmt: skip
        return done.stdout if done.returncode == 0 else None

    def remove(self) -> None:
        docker_cli.remove(self.name)


_REFERENCE = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)(?::-([^}]*))?\}")


SHARED_VARIABLES = "EVALRELAY_TASK_VARIABLES"
"""The worker's variables a task's `[environment.env]` may read (comma-separated names):
no other, since a task is not the worker's to trust with its keys."""


def expanded(env: dict[str, str]) -> dict[str, str]:
    """`[environment.env]` values with `${VAR}` and `${VAR:-default}` read from this
    worker's environment, as Harbor reads them from its host's; a variable the worker
    does not share (`SHARED_VARIABLES`) reads as unset: its default, else empty."""
    shared = {n.strip() for n in os.environ.get(SHARED_VARIABLES, "").split(",") if n.strip()}

    def value(match: re.Match[str]) -> str:
        found = os.environ.get(match.group(1)) if match.group(1) in shared else None
        return found or (match.group(2) or "")

    return {name: _REFERENCE.sub(value, text) for name, text in env.items()}


def _cli(
    args: list[str],
    env: dict[str, str],
    seconds: float,
    check: bool = True,
    stdin: str | None = None,
) -> subprocess.CompletedProcess[str]:
    """The Docker CLI with the worker's Docker settings and the variables `--env NAME`
    reads; `subprocess.TimeoutExpired` past `seconds` (when `check`)."""
    try:
        return subprocess.run(
            [docker_cli.cli_path(), *args],
            env={**env, **docker_cli.cli_environment()},
            input=stdin, stdin=None if stdin is not None else subprocess.DEVNULL,
            capture_output=True, text=True, errors="replace", timeout=seconds,
        )  # fmt: skip
    except subprocess.TimeoutExpired:
        if check:
            raise
        return subprocess.CompletedProcess(args, 124, "", "")


def _said(done: subprocess.CompletedProcess[str]) -> str:
    lines = (done.stderr or done.stdout).strip().splitlines()
    return lines[-1] if lines else f"exit code {done.returncode}"


def _text(data: bytes | str | None) -> str:
    if data is None:
        return ""
    return data if isinstance(data, str) else data.decode("utf-8", "replace")

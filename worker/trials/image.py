"""A task's environment image on this host: built once from `environment/`, or taken as
its `docker_image`.

A built image's tag holds the hash of its build context (`evalrelay-task:<hash>`), so
every trial of a task (and of any task with the same context) on this host uses the
first build; workers of one host building the same context wait on one lock file
rather than build it twice.
"""

from __future__ import annotations

import re
import subprocess
import tempfile
from pathlib import Path

from filelock import FileLock

from evalrelay.bridge.evalfile.harbor.folder import TaskSpec
from evalrelay.worker.agents import docker_cli
from evalrelay.worker.trials.files import write_files

LOCKS = Path(tempfile.gettempdir()) / "evalrelay-task-images"
CONTEXT_LABEL = "evalrelay.context"
NOISE = re.compile(r"DEPRECATED|legacy builder|buildx|BuildKit", re.IGNORECASE)
"""The classic builder's notice about BuildKit, which says nothing of a failed build."""


class ImageError(Exception):
    """Raised when the environment's image cannot be built or found; says why."""


def ensure_image(spec: TaskSpec, contents: dict[str, bytes]) -> None:
    """The task's image, present on this host's engine once this returns."""
    if docker_cli.has_image(spec.image):
        return
    problem = docker_cli.engine_problem()
    if problem is not None:
        raise ImageError(f"no Docker engine answers on this worker ({problem})")
    if not spec.build:
        _pull(spec.image, spec.config.environment.build_timeout_sec)
        return
    LOCKS.mkdir(parents=True, exist_ok=True)
    with FileLock(str(LOCKS / f"{spec.image.rsplit(':', 1)[-1]}.lock")):
        if docker_cli.has_image(spec.image):  # another worker built it meanwhile
            return
        _build(spec, contents)


def _build(spec: TaskSpec, contents: dict[str, bytes]) -> None:
    context = {f.path: f for f in spec.under("environment")}
    seconds = spec.config.environment.build_timeout_sec
    with tempfile.TemporaryDirectory(prefix="evalrelay-context-") as scratch:
        write_files(Path(scratch), list(context.values()), contents, strip="environment/")
        label = f"{CONTEXT_LABEL}={spec.image.rsplit(':', 1)[-1]}"
        try:
            done = subprocess.run(
                [docker_cli.cli_path(), "build", "--quiet", "--label", label,
                 "-t", spec.image, scratch],
                env=docker_cli.cli_environment(), capture_output=True, text=True,
                errors="replace", timeout=seconds,
            )  # fmt: skip
        except subprocess.TimeoutExpired:
            raise ImageError(
                f"building the environment of task '{spec.name}' took over its "
                f"build_timeout_sec ({seconds:g} s)"
            ) from None
    if done.returncode != 0:
        said = [line for line in (done.stderr or done.stdout).strip().splitlines()
                if not NOISE.search(line)]  # fmt: skip
        tail = "\n".join(said[-15:])
        raise ImageError(f"building the environment of task '{spec.name}' failed:\n{tail}")


def _pull(image: str, seconds: float) -> None:
    """A `docker_image` this engine lacks, from its registry."""
    done = docker_cli.docker("pull", "--quiet", image, seconds=seconds)
    if done.returncode != 0:
        said = (done.stderr or done.stdout).strip().splitlines()
        raise ImageError(
            f"the task's docker_image {image} is not on this worker's engine and could not "
            f"be pulled ({said[-1] if said else done.returncode}); load or build it on this host"
        )

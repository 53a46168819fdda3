"""The sandbox image, built by the worker from the Dockerfile it ships when the engine
lacks it: a host with Docker needs no step of its own before `runtime: sandbox` runs.

Only the default image (`evalrelay-sandbox:bookworm`) is built here, from
`sandbox.Dockerfile` beside this module; an image a target names in `isolation.image`
is the operator's to provide. The build is tagged with a hash of the Dockerfile and of
its base (`evalrelay-sandbox:auto-<hash>`), so a worker of a newer release builds its own
and any later attempt on the host finds it; one build runs at a time on a host (a file
lock), and a worker that waited for another's finds the image made.
"""

from __future__ import annotations

import hashlib
import logging
import os
import tempfile
import time
from pathlib import Path

from filelock import FileLock

from evalrelay.bridge.targets.settings import SANDBOX_IMAGE
from evalrelay.worker.agents import docker_cli
from evalrelay.worker.agents.sandbox_attempt import SandboxUnavailable

log = logging.getLogger(__name__)

DOCKERFILE = Path(__file__).with_name("sandbox.Dockerfile")
DEFAULT_BASE = "debian:bookworm-slim"
BASE_VARIABLE = "EVALRELAY_SANDBOX_BASE"
"""The image the build starts from (default `debian:bookworm-slim`, from a registry): a
host with no registry names a Debian 12 image of its own here."""
BUILD_SECONDS = 900.0
"""How long a build may take (apt installs Node.js, git and Python: a few minutes)."""
RETRY_SECONDS = 600.0
"""A build that failed is not tried again by this process for so long: every attempt
meanwhile is told the same at once (under `auto`, runs under bubblewrap)."""

_failures: dict[str, tuple[float, str]] = {}
"""The tag of each build that failed here, with when and why."""


def sandbox_image(image: str) -> str:
    """The image to run the agent in: `image` when the engine has it; for the default
    image, the build of the shipped Dockerfile, made now if no worker made it before.
    Raises SandboxUnavailable saying why when there is none."""
    if docker_cli.has_image(image):
        return image
    problem = docker_cli.engine_problem()
    if problem:
        raise SandboxUnavailable(
            f"runtime: sandbox with Docker: no engine answers on this worker ({problem})"
        )
    if image != SANDBOX_IMAGE:
        raise SandboxUnavailable(
            f"runtime: sandbox: the image {image} is not on this worker's Docker engine; "
            f"build it (docker build -t {image} - < {DOCKERFILE}) or name another in "
            "isolation.image"
        )
    return _built()


def built_tag() -> str:
    """The tag of the shipped Dockerfile's build on the base this worker is set to use."""
    digest = hashlib.sha256(DOCKERFILE.read_bytes() + b"\0" + _base().encode()).hexdigest()
    return f"evalrelay-sandbox:auto-{digest[:12]}"


def _built() -> str:
    tag = built_tag()
    failed = _failures.get(tag)
    if failed is not None and time.monotonic() - failed[0] < RETRY_SECONDS:
        raise SandboxUnavailable(failed[1])
    try:
        return _build(tag)
    except SandboxUnavailable as exc:
        _failures[tag] = (time.monotonic(), str(exc))
        raise


def _build(tag: str) -> str:
    lock = Path(tempfile.gettempdir()) / f"evalrelay-sandbox-build-{os.getuid()}.lock"
    with FileLock(lock):
        if docker_cli.has_image(tag):
            return tag
        base = _base()
        log.warning("sandbox image: %s is not on this host; building %s on %s (once per host)",
                    SANDBOX_IMAGE, tag, base)  # fmt: skip
        done = docker_cli.docker(
            "build", "--quiet", "--build-arg", f"BASE={base}", "--tag", tag, "-",
            seconds=BUILD_SECONDS, stdin=DOCKERFILE.read_text(),
        )  # fmt: skip
    if done.returncode != 0:
        said = (done.stderr or done.stdout).strip().splitlines()[-1:]  # the error itself
        raise SandboxUnavailable(
            f"runtime: sandbox: the image {SANDBOX_IMAGE} is not on this worker's Docker engine "
            f"and building it on {base} failed ({' '.join(said)}); set {BASE_VARIABLE} to a "
            f"Debian 12 image the engine has, or build {SANDBOX_IMAGE} yourself"
        )
    log.warning("sandbox image: built %s", tag)
    return tag


def _base() -> str:
    return os.environ.get(BASE_VARIABLE) or DEFAULT_BASE

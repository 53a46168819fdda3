"""A Docker engine and the sandbox image, for the tests of `runtime: sandbox` under Docker.

There is no registry to pull from: the base is a Debian root made by debootstrap from the
mirror apt uses here and loaded with `docker import`; the sandbox image is built on it
from the Dockerfile the worker ships (`worker/agents/sandbox.Dockerfile`). Both are kept
by tag (the sandbox image's tag holds a hash of its Dockerfile), so a machine builds them
once, in about a minute; `.ci/run` builds them the same way before the tests. The engine
is started when none answers (`dockerd`, from Debian's docker.io), and left running for
the next run.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import os
import re
import shutil
import subprocess
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import IO

ROOT = Path(__file__).resolve().parents[3]
DOCKERFILE = ROOT / "worker" / "agents" / "sandbox.Dockerfile"
BASE_IMAGE = "evalrelay-base:bookworm"
SUITE = "bookworm"
CACHE = Path.home() / ".cache" / "evalrelay-test-docker"
DEFAULT_MIRROR = "http://deb.debian.org/debian"


def sandbox_image() -> str:
    """The tag of the sandbox image, built when the engine does not hold it."""
    tag = "evalrelay-sandbox:test-" + hashlib.sha256(DOCKERFILE.read_bytes()).hexdigest()[:12]
    docker_engine()
    with _building():
        if not _has_image(tag):
            base_image()
            _run(
                ["docker", "build", "--quiet", "--build-arg", f"BASE={BASE_IMAGE}", "-t", tag,
                 "-f", str(DOCKERFILE), str(DOCKERFILE.parent)],
                "docker build of the sandbox image",
            )  # fmt: skip
    return tag


def base_image() -> str:
    """A minimal Debian image of the suite the worker runs, when the engine lacks one."""
    if _has_image(BASE_IMAGE):
        return BASE_IMAGE
    if shutil.which("debootstrap") is None:
        raise RuntimeError("the test base image needs debootstrap: apt-get install debootstrap")
    with tempfile.TemporaryDirectory(prefix="evalrelay-rootfs-") as scratch:
        rootfs = Path(scratch) / "rootfs"
        _run(["debootstrap", "--variant=minbase", SUITE, str(rootfs), apt_mirror()], "debootstrap")
        tar = subprocess.Popen(["tar", "-C", str(rootfs), "-c", "."], stdout=subprocess.PIPE)
        _run(["docker", "import", "-", BASE_IMAGE], "docker import", stdin=tar.stdout)
        tar.wait()
    return BASE_IMAGE


def docker_engine() -> None:
    """Start dockerd when no engine answers, and wait until one does."""
    if shutil.which("docker") is None:
        raise RuntimeError("the Docker sandbox tests need Docker: apt-get install docker.io")
    if _answers():
        return
    dockerd = shutil.which("dockerd")
    if dockerd is None:
        raise RuntimeError("the Docker sandbox tests need an engine: apt-get install docker.io")
    CACHE.mkdir(parents=True, exist_ok=True)
    with (CACHE / "dockerd.log").open("ab") as log:
        subprocess.Popen([dockerd], stdout=log, stderr=log, start_new_session=True)
    deadline = time.monotonic() + 60
    while not _answers():
        if time.monotonic() > deadline:
            raise RuntimeError(f"dockerd did not answer within 60 s; see {CACHE / 'dockerd.log'}")
        time.sleep(0.5)


def containers_of_this_process() -> list[str]:
    """The sandbox containers this test process started that are still there."""
    argv = ["docker", "ps", "--all", "--filter", f"label=evalrelay.pid={os.getpid()}"]
    done = subprocess.run([*argv, "--format", "{{.Names}}"], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    return done.stdout.split()


def apt_mirror() -> str:
    """The Debian mirror apt uses on this machine (its deb822 or one-line sources)."""
    sources = [Path("/etc/apt/sources.list"), *sorted(Path("/etc/apt/sources.list.d").glob("*"))]
    for path in sources:
        if not path.is_file():
            continue
        text = path.read_text(errors="replace")
        for uri in re.findall(r"^URIs:\s*(\S+)", text, re.MULTILINE):
            if "security" not in uri:
                return uri
        for uri in re.findall(r"^deb\s+(?:\[[^]]*\]\s+)?(\S+)\s+" + SUITE + r"\s", text, re.M):
            return str(uri)
    return DEFAULT_MIRROR


@contextlib.contextmanager
def _building() -> Iterator[None]:
    """One build at a time on this machine: test processes running at once wait for it."""
    CACHE.mkdir(parents=True, exist_ok=True)
    with (CACHE / "build.lock").open("w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        yield


def _answers() -> bool:
    done = subprocess.run(["docker", "version"], capture_output=True, timeout=30)
    return done.returncode == 0


def _has_image(tag: str) -> bool:
    done = subprocess.run(["docker", "image", "inspect", tag], capture_output=True, timeout=30)
    return done.returncode == 0


def _run(argv: list[str], what: str, stdin: IO[bytes] | None = None) -> None:
    env = {**os.environ, "DEBIAN_FRONTEND": "noninteractive"}
    done = subprocess.run(argv, stdin=stdin, capture_output=True, text=True, env=env)
    if done.returncode != 0:
        raise RuntimeError(f"{what} failed ({done.returncode}): {done.stderr[-2000:]}")

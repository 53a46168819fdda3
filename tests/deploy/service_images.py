"""The service images (`Dockerfile`: api, agent, redis, flower), built without a registry.

They are built on the Debian base the sandbox tests import (`evalrelay-base:bookworm`,
debootstrap + `docker import`), once per content: the tag holds a hash of everything the
build reads, so a machine builds them once (a few minutes, most of it pip and npm) and a
change to the source rebuilds only the thin top layers. `.ci/run` builds them before the
tests, outside any test's time limit. This machine's CA bundle goes into `docker/ca/`
first: pip and npm inside the build go through the same TLS proxy as the host.
"""

from __future__ import annotations

import hashlib
import shutil
import subprocess
from pathlib import Path

from tests.worker.agents.sandbox_images import (
    BASE_IMAGE,
    _building,
    _has_image,
    _run,
    base_image,
    docker_engine,
)

ROOT = Path(__file__).resolve().parents[2]
TARGETS = ("api", "agent", "redis", "flower")
HOST_CA = Path("/etc/ssl/certs/ca-certificates.crt")


def images_tag() -> str:
    """A hash of every file the build context holds (what `.dockerignore` lets through)."""
    digest = hashlib.sha256()
    files = [ROOT / "Dockerfile", ROOT / "pyproject.toml", ROOT / "README.md"]
    for folder in ("evalrelay", "bridge", "worker", "workspace_templates", "docker"):
        files += sorted(p for p in (ROOT / folder).rglob("*") if p.is_file())
    for path in files:
        if "__pycache__" in path.parts or path.suffix == ".pyc" or path.parent.name == "ca":
            continue
        digest.update(path.relative_to(ROOT).as_posix().encode() + b"\0" + path.read_bytes())
    return "test-" + digest.hexdigest()[:12]


def service_images() -> str:
    """The tag the three images have (`evalrelay-api:TAG` ...), built when missing."""
    docker_engine()
    with _building():
        tag = images_tag()
        missing = [t for t in TARGETS if not _has_image(f"evalrelay-{t}:{tag}")]
        # Every build here needs it, the tests' own `docker-compose build` too, even when
        # these images are already made (a fresh clone on a machine that built them before).
        if HOST_CA.is_file():
            shutil.copyfile(HOST_CA, ROOT / "docker" / "ca" / "host.crt")
        if missing:
            base_image()
        for target in missing:
            _run(
                ["docker", "build", "--quiet", "--build-arg", f"BASE={BASE_IMAGE}",
                 "--target", target, "-t", f"evalrelay-{target}:{tag}", str(ROOT)],
                f"docker build of the {target} image",
            )  # fmt: skip
        if images_tag() != tag:  # the source changed while it was built: not that content
            for target in missing:
                subprocess.run(["docker", "rmi", f"evalrelay-{target}:{tag}"], capture_output=True)
            raise RuntimeError("the source changed while the service images were built; run again")
    return tag


def in_image(image: str, *argv: str, entrypoint: str | None = None) -> str:
    """Run a command in a throwaway container of `image`; its output, or an error with it."""
    command = ["docker", "run", "--rm", "--network", "none"]
    if entrypoint is not None:
        command += ["--entrypoint", entrypoint]
    done = subprocess.run([*command, image, *argv], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, f"{argv} in {image}: {done.stdout}{done.stderr}"
    return done.stdout

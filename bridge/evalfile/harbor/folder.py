"""Loading one task folder: its `task.toml` checked, its files listed by content hash.

Everything a worker needs travels with the job (`TaskSpec`): the configuration and the
folder's files, each by its SHA-256 (their bytes go to Redis once, `bridge.queue.blobs`),
so a worker on another host needs no shared disk. The image a Dockerfile builds is named
after the hash of its build context (`environment/`), so each host builds it once.
"""

from __future__ import annotations

import hashlib
import os
import re
import tomllib
from pathlib import Path, PurePosixPath
from typing import NamedTuple

from pydantic import BaseModel, ConfigDict, ValidationError

from evalrelay.bridge.errors import Diagnostic, InvalidFileError
from evalrelay.bridge.evalfile.harbor.config import TaskConfig, unknown_keys
from evalrelay.bridge.evalfile.harbor.places import Loc, Places

TASK_FILE = "task.toml"
DATASET_FILE = "dataset.toml"
IMAGE_PREFIX = "evalrelay-task"
"""Images built from a task's Dockerfile are `evalrelay-task:<context hash>`."""
MAX_TASK_BYTES = 64 * 1024 * 1024
"""A task folder's files, all together: what a job may carry through Redis."""
COMPOSE_FILES = ("docker-compose.yaml", "docker-compose.yml", "compose.yaml", "compose.yml")


class TaskFile(BaseModel):
    """One file of a task folder, by content."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    path: str
    """POSIX path relative to the task folder."""
    sha256: str
    executable: bool = False
    size: int


class TaskSpec(BaseModel):
    """What a trial's job carries of its task."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    name: str
    config: TaskConfig
    files: list[TaskFile]
    image: str
    """`[environment].docker_image`, else `evalrelay-task:<hash of environment/>`."""
    build: bool
    """Whether the worker builds `image` from `environment/` (else it must have it)."""

    def file(self, path: str) -> TaskFile | None:
        return next((f for f in self.files if f.path == path), None)

    def under(self, folder: str) -> list[TaskFile]:
        """The files under `folder` (e.g. `tests`), in path order."""
        prefix = folder.rstrip("/") + "/"
        return [f for f in self.files if f.path.startswith(prefix)]


class LoadedTask(NamedTuple):
    folder: Path
    spec: TaskSpec
    instructions: list[str]
    """The instruction of each step (one for a single-step task)."""
    notes: tuple[Diagnostic, ...]
    """Keys read in no way (Harbor ignores unknown keys), each at its place."""


def is_task_folder(path: Path) -> bool:
    return (path / TASK_FILE).is_file()


def task_name(folder: Path, config: TaskConfig) -> str:
    return config.task.name or folder.name


def dataset_of(folder: Path) -> str:
    """A task's dataset: its parent folder's (`dataset.toml`'s name when it has one), so
    the same task is the same job whatever path it was run by."""
    parent = folder.resolve().parent
    manifest = parent / DATASET_FILE
    if manifest.is_file():
        try:
            data = tomllib.loads(manifest.read_text(encoding="utf-8"))
        except (tomllib.TOMLDecodeError, UnicodeDecodeError, OSError):
            data = {}
        table = data.get("dataset", data)
        if isinstance(table, dict) and isinstance(table.get("name"), str):
            return str(table["name"])
    return parent.name or "tasks"


def load_task(folder: Path) -> LoadedTask:
    """The task in `folder`, or InvalidFileError with every problem found, each at its
    file, line and column."""
    toml_path = folder / TASK_FILE
    text = toml_path.read_text(encoding="utf-8")
    config = _config(toml_path, text)
    places = Places(text)
    problems = _refusals(toml_path, folder, config, places)
    problems += _missing_files(toml_path, folder, config)
    files, too_big = _files(folder)
    if too_big:
        problems.append(Diagnostic(toml_path, 1, 1, too_big))
    if problems:
        raise InvalidFileError(problems)
    notes = tuple(
        Diagnostic(
            toml_path, *places.of(loc),
            f"`{'.'.join(map(str, loc))}` is not part of Harbor's task format as evalrelay "
            "reads it; ignored",
        )
        for loc in unknown_keys(config)
    )  # fmt: skip
    name = config.task.name
    if name is None or "/" not in name:
        notes += (
            Diagnostic(
                toml_path, *places.of(("task", "name")),
                f"Harbor needs [task].name as `org/name`; evalrelay runs this task as "
                f"'{task_name(folder, config)}'",
            ),
        )  # fmt: skip
    env = config.environment
    image = env.docker_image or f"{IMAGE_PREFIX}:{context_hash(files)}"
    spec = TaskSpec(
        name=task_name(folder, config),
        config=config,
        files=files,
        image=image,
        build=env.docker_image is None,
    )
    return LoadedTask(folder, spec, _instructions(folder, config), notes)


def _config(toml_path: Path, text: str) -> TaskConfig:
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        line, column = _decode_place(str(exc))
        message = re.sub(r"\s*\(at .*\)$", "", str(exc))
        raise InvalidFileError(
            [Diagnostic(toml_path, line, column, f"not valid TOML: {message}")]
        ) from None
    try:
        return TaskConfig.model_validate(data)
    except ValidationError as exc:
        places = Places(text)
        said: dict[Loc, list[str]] = {}
        for error in exc.errors(include_url=False):
            loc: Loc = tuple(p for p in error["loc"] if isinstance(p, str | int))
            # a missing key is named in full; past a written key, pydantic's union
            # members are not keys of the file
            shown = loc if error["type"] == "missing" else places.written(loc)
            said.setdefault(shown, []).append(error["msg"])
        problems = []
        for loc, messages in said.items():
            line, column = places.of(loc)
            where = ".".join(map(str, loc)) or "task.toml"
            text_ = "; or ".join(dict.fromkeys(messages))
            problems.append(Diagnostic(toml_path, line, column, f"{where}: {text_}"))
        raise InvalidFileError(problems) from None


def _decode_place(message: str) -> tuple[int, int]:
    match = re.search(r"line (\d+), column (\d+)", message)
    return (int(match.group(1)), int(match.group(2))) if match else (1, 1)


def _refusals(
    toml_path: Path, folder: Path, config: TaskConfig, places: Places
) -> list[Diagnostic]:
    """What evalrelay cannot run yet, each with the reason."""
    env = config.environment
    found = []

    def refuse(loc: Loc, message: str) -> None:
        line, column = places.of(loc)
        found.append(Diagnostic(toml_path, line, column, message))

    for name in COMPOSE_FILES:
        if (folder / "environment" / name).is_file():
            found.append(
                Diagnostic(
                    folder / "environment" / name, 1, 1,
                    "multi-container tasks (a Compose file in environment/) are not "
                    "supported yet: evalrelay runs one container per trial; give the task "
                    "an environment/Dockerfile or a docker_image",
                )
            )  # fmt: skip
    if env.os is not None and env.os.lower() != "linux":
        refuse(("environment", "os"), f"os = {env.os!r}: only Linux containers run here")
    if env.gpus > 0:
        refuse(
            ("environment", "gpus"),
            f"gpus = {env.gpus}: evalrelay's workers give task containers no GPU yet; "
            "run this task with Harbor on a GPU host",
        )
    for phase in ("agent", "verifier"):
        mode = getattr(config, phase).network_mode
        if mode is not None and mode != env.network:
            refuse(
                (phase, "network_mode"),
                f"[{phase}].network_mode = {mode!r} differs from the environment's "
                f"({env.network!r}): a trial runs in one container here, with one network",
            )
    if env.network == "allowlist":
        refuse(
            ("environment", "network_mode"),
            'network_mode = "allowlist" is not enforced here yet: a trial\'s container '
            "gets either the network (public) or none (no-network); choose one",
        )
    return found


def _missing_files(toml_path: Path, folder: Path, config: TaskConfig) -> list[Diagnostic]:
    """The files a trial needs, by the task's shape (single- or multi-step)."""
    needed: list[tuple[str, str]] = []
    if config.environment.docker_image is None:
        needed.append(("environment/Dockerfile", "or set [environment].docker_image"))
    if not config.steps:
        needed += [
            ("instruction.md", "what the agent is asked to do"),
            ("tests/test.sh", "the verifier: it writes /logs/verifier/reward.txt"),
        ]
    for step in config.steps:
        base = f"steps/{step.name}"
        needed.append((f"{base}/instruction.md", f"step '{step.name}' asks the agent"))
        if not (folder / base / "tests/test.sh").is_file():
            needed.append(("tests/test.sh", f"step '{step.name}' has no {base}/tests/test.sh"))
    return [
        Diagnostic(toml_path, 1, 1, f"{path} is missing ({why})")
        for path, why in dict(needed).items()
        if not (folder / path).is_file()
    ]


def _instructions(folder: Path, config: TaskConfig) -> list[str]:
    paths = [f"steps/{s.name}/instruction.md" for s in config.steps] or ["instruction.md"]
    return [(folder / p).read_text(encoding="utf-8", errors="replace") for p in paths]


def _files(folder: Path) -> tuple[list[TaskFile], str | None]:
    """Every file of the folder (links followed, if they stay inside it), sorted by path;
    and why not, when they are too many bytes to send."""
    root = folder.resolve()
    files, total = [], 0
    for parent, folders, names in os.walk(root, followlinks=False):
        folders[:] = sorted(d for d in folders if d not in (".git", "__pycache__"))
        for name in sorted(names):
            path = Path(parent, name)
            real = path.resolve()
            if not real.is_relative_to(root) or not real.is_file():
                continue
            data = real.read_bytes()
            total += len(data)
            files.append(
                TaskFile(
                    path=PurePosixPath(path.relative_to(root)).as_posix(),
                    sha256=hashlib.sha256(data).hexdigest(),
                    executable=os.access(real, os.X_OK),
                    size=len(data),
                )
            )
    if total > MAX_TASK_BYTES:
        return files, (
            f"the task's files add up to {total // (1024 * 1024)} MB, over the "
            f"{MAX_TASK_BYTES // (1024 * 1024)} MB a job carries; put large inputs in the "
            "image (environment/Dockerfile) or a docker_image"
        )
    return sorted(files, key=lambda f: f.path), None


def context_hash(files: list[TaskFile]) -> str:
    """The hash of the build context, `environment/`: paths, contents and modes."""
    digest = hashlib.sha256()
    for file in files:
        if file.path.startswith("environment/"):
            digest.update(f"{file.path}\0{file.sha256}\0{int(file.executable)}\n".encode())
    return digest.hexdigest()[:32]

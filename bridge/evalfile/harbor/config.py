"""`task.toml` as pydantic models: Harbor's schema 1.0 and 1.1, with its defaults.

Harbor ignores keys it does not know, and published tasks carry such keys (newer
schema versions, tool-specific tables), so a key unknown here is kept and reported as
a note by the loader, not refused. Deprecated spellings (`version`, `memory = "4G"`,
`storage`, `allow_internet`) are read as Harbor reads them.
"""

from __future__ import annotations

import re
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

NetworkMode = Literal["public", "no-network", "allowlist"]
HELD_CPUS = 1.0
HELD_MEMORY_MB = 2048
"""What a trial of a task that sets no `cpus` or `memory_mb` holds of its host's capacity:
Harbor's documented defaults."""


class TomlModel(BaseModel):
    """A table of task.toml: unknown keys are kept (see `unknown_keys`)."""

    model_config = ConfigDict(extra="allow", frozen=True, populate_by_name=True)


class Author(TomlModel):
    name: str | None = None
    email: str | None = None


class TaskInfo(TomlModel):
    """`[task]`."""

    name: str | None = None
    """`org/name` or a plain name; the folder's name when unset."""
    description: str | None = None
    authors: list[Author | str] = Field(default_factory=list)
    keywords: list[str] = Field(default_factory=list)


class Healthcheck(TomlModel):
    """`[environment.healthcheck]` or `[steps.healthcheck]`, with Docker HEALTHCHECK's
    meaning: the command is run every `interval_sec` until it exits 0; `retries` failures
    in a row (after `start_period_sec`) fail the environment or the step."""

    command: str
    interval_sec: float = Field(default=5.0, gt=0)
    timeout_sec: float = Field(default=30.0, gt=0)
    retries: int = Field(default=3, ge=1)
    start_period_sec: float = Field(default=0.0, ge=0)


class EnvironmentConfig(TomlModel):
    """`[environment]`: the container the agent works in."""

    docker_image: str | None = None
    """A prebuilt image; else `environment/Dockerfile` is built."""
    build_timeout_sec: float = Field(default=600.0, gt=0)
    cpus: float | None = Field(default=None, gt=0)
    """A Docker limit when set; unset (as in Harbor 0.26), no limit, and a trial holds
    `HELD_CPUS` of its host's capacity."""
    memory_mb: int | None = Field(default=None, gt=0)
    """Likewise: a Docker limit when set, `HELD_MEMORY_MB` held when unset."""
    storage_mb: int | None = Field(default=None, gt=0)
    gpus: int = Field(default=0, ge=0)
    allow_internet: bool | None = None
    """Schema 1.0's switch: false is `network_mode = "no-network"`."""
    network_mode: NetworkMode | None = None
    allowed_hosts: list[str] = Field(default_factory=list)
    workdir: str | None = None
    env: dict[str, str] = Field(default_factory=dict)
    mcp_servers: list[dict[str, Any]] = Field(default_factory=list)
    healthcheck: Healthcheck | None = None
    """Run once the container has started, before the first step."""
    os: str | None = None
    """`linux` (the default) or `windows`."""

    @model_validator(mode="before")
    @classmethod
    def _sizes(cls, data: Any) -> Any:
        """Schema 1.0's `memory = "4G"` and `storage = "10G"` as megabytes."""
        if isinstance(data, dict):
            data = dict(data)
            for old, new in (("memory", "memory_mb"), ("storage", "storage_mb")):
                if old in data and new not in data:
                    data[new] = megabytes(data.pop(old))
        return data

    @property
    def held_cpus(self) -> float:
        return self.cpus if self.cpus is not None else HELD_CPUS

    @property
    def held_memory_mb(self) -> int:
        return self.memory_mb if self.memory_mb is not None else HELD_MEMORY_MB

    @property
    def network(self) -> NetworkMode:
        """The policy: `network_mode`, else `allow_internet`, else public."""
        if self.network_mode is not None:
            return self.network_mode
        return "no-network" if self.allow_internet is False else "public"


class PhaseConfig(TomlModel):
    """`[agent]` or `[verifier]`."""

    timeout_sec: float = Field(default=600.0, gt=0)
    env: dict[str, str] = Field(default_factory=dict)
    user: str | None = None
    network_mode: NetworkMode | None = None
    """A phase's own network; only the environment's is supported here (one container)."""


class StepPhase(TomlModel):
    """`[steps.agent]` or `[steps.verifier]`: unset values fall back to the task's."""

    timeout_sec: float | None = Field(default=None, gt=0)
    env: dict[str, str] = Field(default_factory=dict)
    user: str | None = None


class StepConfig(TomlModel):
    """One `[[steps]]` entry; its files are under `steps/<name>/`."""

    name: str = Field(min_length=1)
    min_reward: float | dict[str, float] | None = None
    """A number gates the `reward` key, a table each key it names: a step whose gated
    reward is below it (or missing) skips the steps after it."""
    agent: StepPhase = Field(default_factory=StepPhase)
    verifier: StepPhase = Field(default_factory=StepPhase)
    healthcheck: Healthcheck | None = None
    artifacts: list[str | dict[str, Any]] = Field(default_factory=list)

    @field_validator("name")
    @classmethod
    def _folder_name(cls, value: str) -> str:
        if "/" in value or value in (".", ".."):
            raise ValueError("a step's name is a folder under steps/: no '/'")
        return value


class SolutionConfig(TomlModel):
    """`[solution]`: the `oracle` agent's variables for solve.sh."""

    env: dict[str, str] = Field(default_factory=dict)


class TaskConfig(TomlModel):
    """A whole `task.toml`."""

    schema_version: str | None = None
    version: str | None = None
    """Schema 1.0's name for `schema_version`."""
    task: TaskInfo = Field(default_factory=TaskInfo)
    metadata: dict[str, Any] = Field(default_factory=dict)
    environment: EnvironmentConfig = Field(default_factory=EnvironmentConfig)
    agent: PhaseConfig = Field(default_factory=PhaseConfig)
    verifier: PhaseConfig = Field(default_factory=PhaseConfig)
    solution: SolutionConfig = Field(default_factory=lambda: SolutionConfig())
    steps: list[StepConfig] = Field(default_factory=list)
    multi_step_reward_strategy: Literal["mean", "final"] | None = None
    """A multi-step trial's reward: per reward name, the `mean` over the steps that ran
    (the default; a name a step lacks counts 0 there), or the `final` step's."""
    artifacts: list[str | dict[str, Any]] = Field(default_factory=list)

    @field_validator("steps")
    @classmethod
    def _distinct_steps(cls, steps: list[StepConfig]) -> list[StepConfig]:
        names = [s.name for s in steps]
        twice = sorted({n for n in names if names.count(n) > 1})
        if twice:
            raise ValueError(f"step names must differ: {', '.join(twice)} appear twice")
        return steps


_SIZE = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*([KMGT]?)i?B?\s*$", re.IGNORECASE)
_FACTOR = {"": 1 / (1024 * 1024), "K": 1 / 1024, "M": 1, "G": 1024, "T": 1024 * 1024}


def megabytes(value: Any) -> Any:
    """`"4G"` → 4096; a number is megabytes already; anything else is left for the
    model to refuse."""
    if isinstance(value, str) and (match := _SIZE.match(value)):
        return max(1, int(float(match.group(1)) * _FACTOR[match.group(2).upper()]))
    return value


def unknown_keys(model: BaseModel, at: tuple[str | int, ...] = ()) -> list[tuple[str | int, ...]]:
    """The places of every key no model here knows, in `model` and the tables under it.
    Free-form tables (`metadata`, `env`, `solution`) hold no unknown keys."""
    found = [(*at, key) for key in (model.model_extra or {})]
    for name in type(model).model_fields:
        value = getattr(model, name)
        if isinstance(value, BaseModel):
            found += unknown_keys(value, (*at, name))
        elif isinstance(value, list):
            for i, item in enumerate(value):
                if isinstance(item, BaseModel):
                    found += unknown_keys(item, (*at, name, i))
    return found

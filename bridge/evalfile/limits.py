"""Bounds on what an eval file may ask for, checked when it is loaded (`validate` too)."""

from __future__ import annotations

from typing import Annotated

from pydantic import BaseModel, ConfigDict, Field, PositiveInt

MAX_JOB_SECONDS = 4 * 3600.0
"""No job may run longer; the broker's visibility timeout is set well above it."""

MAX_REPEATS = 1000
"""Runs of one case in one campaign; more is almost always a typo."""

Seconds = Annotated[float, Field(gt=0, le=MAX_JOB_SECONDS, allow_inf_nan=False)]
"""A time limit: positive, finite, at most `MAX_JOB_SECONDS`."""

Repeats = Annotated[int, Field(ge=1, le=MAX_REPEATS)]

MIB = 1024 * 1024

TemplateSeconds = Annotated[float, Field(gt=0, le=3600, allow_inf_nan=False)]


class TemplateLimits(BaseModel):
    """`template_limits` in `evalrelay.yaml`: what the templates of one suite file may cost.

    A template is code written by whoever wrote the file; without bounds, two nested loops
    hang the watcher and a loop printing `x` fills its memory."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    iterations: PositiveInt = 100_000
    """Loop iterations (and macro calls) in one template; a template over it stops."""
    output_bytes: PositiveInt = MIB
    """Characters one template (or one string it builds) may produce."""
    seconds: TemplateSeconds = 5.0
    """Time all the templates of one file may take together."""


class LoadLimits(BaseModel):
    """`load_limits` in `evalrelay.yaml`: what loading one eval file may cost."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    bytes: PositiveInt = 64 * MIB
    """An eval file larger than this is refused before it is read."""
    cases: PositiveInt = 100_000
    """Cases in one file (a suite's tests times prompts times providers)."""
    seconds: Seconds = 120.0
    """Time the watcher gives one file to load before it stops it."""
    memory_mb: Annotated[int, Field(ge=256)] = 4096
    """Memory (address space) the process loading one file for the watcher may use."""


def how_to_raise(section: str, field: str) -> str:
    """The sentence an exceeded limit ends with."""
    return f"raise `{section}: {{{field}: ...}}` in evalrelay.yaml if the file really needs more"

"""Bounds on what an eval file may ask for, checked when it is loaded (`validate` too)."""

from __future__ import annotations

from typing import Annotated

from pydantic import Field

MAX_JOB_SECONDS = 4 * 3600.0
"""No job may run longer; the broker's visibility timeout is set well above it."""

MAX_REPEATS = 1000
"""Runs of one case in one campaign; more is almost always a typo."""

Seconds = Annotated[float, Field(gt=0, le=MAX_JOB_SECONDS, allow_inf_nan=False)]
"""A time limit: positive, finite, at most `MAX_JOB_SECONDS`."""

Repeats = Annotated[int, Field(ge=1, le=MAX_REPEATS)]

"""A target's settings as a worker reads them: `${VAR}` references replaced from the
environment of the process that runs the target, then validated as typed settings.

Both sides read it (the submitting side checks shapes with every variable set); it imports
no file loader, so the worker reaches no YAML reader through it.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from pydantic import BaseModel

from evalrelay.bridge.targets.settings import ENV_REFERENCE, TargetSettings

SECRET_FIELDS = frozenset({"api_key"})
"""Settings that stay `${VAR}` references until a worker reads them from its own environment."""


class OneTarget(BaseModel):
    target: TargetSettings


def interpolate(value: Any, env: Mapping[str, str], field: str | None = None) -> Any:
    """Replace `${VAR}` and `${{ VAR }}` with values from `env`, except in secret fields."""
    if isinstance(value, dict):
        return {k: interpolate(v, env, str(k)) for k, v in value.items()}
    if isinstance(value, list):
        return [interpolate(v, env, field) for v in value]
    if isinstance(value, str) and field not in SECRET_FIELDS:
        return ENV_REFERENCE.sub(lambda m: env[m.group(1) or m.group(2)], value)
    return value


def references(value: Any, field: str | None = None) -> list[str]:
    if isinstance(value, dict):
        return [r for k, v in value.items() for r in references(v, str(k))]
    if isinstance(value, list):
        return [r for v in value for r in references(v, field)]
    if isinstance(value, str) and field not in SECRET_FIELDS:
        return [m.group(1) or m.group(2) for m in ENV_REFERENCE.finditer(value)]
    return []

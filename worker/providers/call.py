"""Calling a job's target: its settings resolved from this worker's environment, then its
provider's `run`. The worker's `execute` and the `llm_judge` grader both reach a model here;
a worker's event loop reaches it through `call_provider_async`, the provider's `arun`.
"""

from __future__ import annotations

import os

import redis

from evalrelay.bridge.contract.job import Job, TargetRef
from evalrelay.bridge.errors import TargetError
from evalrelay.bridge.results.result import Status
from evalrelay.bridge.targets.interpolation import OneTarget, interpolate
from evalrelay.bridge.targets.settings import TargetSettings
from evalrelay.worker.providers.base import Provider, ProviderFailure, ProviderOutput, provider_for


def call_provider(
    job: Job, deadline: float, client: redis.Redis | None = None, *, steered: bool = False
) -> ProviderOutput:
    """`steered`: the job's own call, admitted by its campaign's steering and budget right
    before it starts (`worker.providers.admission`); a judge's call is not."""
    return _provider(job, client, steered).run(job, deadline)


async def call_provider_async(
    job: Job, deadline: float, client: redis.Redis | None = None, *, steered: bool = False
) -> ProviderOutput:
    """`call_provider` on an event loop: many calls at once, no thread per call."""
    return await _provider(job, client, steered).arun(job, deadline)


def _provider(job: Job, client: redis.Redis | None, steered: bool = False) -> Provider:
    """The job's provider, its settings read with this worker's environment."""
    return target_provider(job.target, client, steered=steered)


def target_provider(
    target: TargetRef, client: redis.Redis | None = None, *, steered: bool = False
) -> Provider:
    """A target's provider, its settings read with this worker's environment; `steered` as
    for `call_provider`."""
    provider = provider_for(resolved_settings(target))
    provider.redis, provider.steered = client, steered
    return provider


def resolved_settings(target: TargetRef) -> TargetSettings:
    """A target's settings, its `${VAR}` references read from this worker's environment;
    an `infra_error` naming a variable this worker lacks."""
    try:
        return OneTarget.model_validate(
            {"target": interpolate(target.settings, _Environment())}
        ).target
    except TargetError as exc:
        raise ProviderFailure(Status.INFRA_ERROR, str(exc)) from None


class _Environment(dict[str, str]):
    """This worker's environment; a missing variable names itself and this machine."""

    def __missing__(self, key: str) -> str:
        value = os.environ.get(key)
        if value is None:
            raise TargetError(
                f"environment variable {key} is not set on worker host "
                f"{os.uname().nodename}; set it where the workers run"
            )
        return value

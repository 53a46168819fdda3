"""An agent's recorded trajectory in Harbor's ATIF (Agent Trajectory Interchange Format).

Harbor keeps what an agent did as `agent/trajectory.json` in ATIF, which its viewer shows
and its training tools read. evalrelay records every agent's event stream as one
`Trajectory` (bridge/results/trajectory.py); this turns one into ATIF: the instruction as
the user's step, then an agent step per tool call, with the call, what it returned as the
step's observation, and the tokens of the model call behind it. What ATIF has no field for
(the step's kind, whether the tool succeeded, the files it touched, how long it took) goes
under each step's `extra`, ATIF's place for custom data.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from evalrelay.bridge.results.result import Result
from evalrelay.bridge.results.trajectory import Trajectory, TrajectoryStep

SCHEMA_VERSION = "ATIF-v1.6"
"""The ATIF release this writes: every field used here exists since then."""


class _Atif(BaseModel):
    model_config = ConfigDict(extra="forbid")


class AtifAgent(_Atif):
    name: str
    version: str
    model_name: str | None = None
    extra: dict[str, Any] | None = None


class AtifToolCall(_Atif):
    tool_call_id: str
    function_name: str
    arguments: dict[str, Any]


class AtifObservationResult(_Atif):
    source_call_id: str | None = None
    content: str | None = None


class AtifObservation(_Atif):
    results: list[AtifObservationResult]


class AtifMetrics(_Atif):
    prompt_tokens: int | None = None
    completion_tokens: int | None = None
    cached_tokens: int | None = None


class AtifStep(_Atif):
    step_id: int = Field(ge=1)
    source: Literal["system", "user", "agent"]
    message: str
    tool_calls: list[AtifToolCall] | None = None
    observation: AtifObservation | None = None
    metrics: AtifMetrics | None = None
    extra: dict[str, Any] | None = None


class AtifFinalMetrics(_Atif):
    total_prompt_tokens: int | None = None
    total_completion_tokens: int | None = None
    total_cached_tokens: int | None = None
    total_cost_usd: float | None = None
    total_steps: int | None = None
    extra: dict[str, Any] | None = None


class AtifTrajectory(_Atif):
    schema_version: str = SCHEMA_VERSION
    session_id: str | None = None
    agent: AtifAgent
    steps: list[AtifStep] = Field(min_length=1)
    final_metrics: AtifFinalMetrics | None = None
    extra: dict[str, Any] | None = None


def atif_trajectory(result: Result) -> dict[str, Any] | None:
    """The result's trajectory as an ATIF document (JSON-ready); None when it has none."""
    trajectory = result.trajectory
    if trajectory is None:
        return None
    steps = [AtifStep(step_id=1, source="user", message=result.raw_request.question)]
    for step in trajectory.steps:
        steps.append(_agent_step(len(steps) + 1, step))
    if result.answer:
        steps.append(AtifStep(step_id=len(steps) + 1, source="agent", message=result.answer))
    document = AtifTrajectory(
        session_id=result.job_id,
        agent=AtifAgent(name=trajectory.agent, version="unknown", extra={"target": result.target}),
        steps=steps,
        final_metrics=_final_metrics(trajectory, len(steps)),
    )
    return document.model_dump(mode="json", exclude_none=True)


def _agent_step(step_id: int, step: TrajectoryStep) -> AtifStep:
    call_id = f"call_{step_id}"
    extra = {
        "kind": step.kind,
        "ok": step.ok,
        "paths": step.paths or None,
        "duration_ms": step.duration_ms,
        "output_chars_cut": step.output_chars_cut or None,
    }
    return AtifStep(
        step_id=step_id,
        source="agent",
        message="",
        tool_calls=[
            AtifToolCall(tool_call_id=call_id, function_name=step.tool, arguments=step.arguments)
        ],
        observation=AtifObservation(
            results=[AtifObservationResult(source_call_id=call_id, content=step.output)]
        ),
        metrics=_metrics(step.usage),
        extra={key: value for key, value in extra.items() if value is not None} or None,
    )


def _metrics(usage: dict[str, int] | None) -> AtifMetrics | None:
    if not usage:
        return None
    return AtifMetrics(
        prompt_tokens=usage.get("input_tokens"),
        completion_tokens=usage.get("output_tokens"),
        cached_tokens=usage.get("cached_input_tokens", usage.get("cache_read_input_tokens")),
    )


def _final_metrics(trajectory: Trajectory, total_steps: int) -> AtifFinalMetrics:
    usage = trajectory.usage or {}
    extra = {
        "model_calls": trajectory.model_calls,
        "duration_ms": trajectory.duration_ms,
        "steps_not_kept": trajectory.steps_not_kept or None,
    }
    return AtifFinalMetrics(
        total_prompt_tokens=usage.get("input_tokens"),
        total_completion_tokens=usage.get("output_tokens"),
        total_cached_tokens=usage.get("cached_input_tokens", usage.get("cache_read_input_tokens")),
        total_cost_usd=trajectory.cost_usd,
        total_steps=total_steps,
        extra={key: value for key, value in extra.items() if value is not None} or None,
    )

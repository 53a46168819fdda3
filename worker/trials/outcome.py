"""What a trial came to: the verifier's rewards, each step's, the time of each phase, and
the files it left, before the worker makes a result of it."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field

from evalrelay.bridge.results.result import Status, TaskStep, TaskTimings
from evalrelay.bridge.results.trajectory import Trajectory


class TrialOutcome(BaseModel):
    model_config = ConfigDict(extra="forbid")

    status: Status = Status.OK
    """`ok` when the verifier ran; `timeout` when the agent or the verifier overran its
    limit; `infra_error` when the environment could not be built or started."""
    error: str | None = None
    reward: float | None = None
    """The trial's reward; null when no verifier ran."""
    rewards: dict[str, float] = Field(default_factory=dict)
    steps: list[TaskStep] | None = None
    timings: TaskTimings = Field(default_factory=TaskTimings)
    trial_dir: str = ""
    """Where the trial's files go under the results folder (`<campaign>/<task>__<job>`)."""
    files: list[str] = Field(default_factory=list)
    """The trial's files, relative to `trial_dir`'s results folder."""
    bundle: str | None = None
    """The hash of the files' tar.gz in Redis, which the collector unpacks there."""
    trajectory: Trajectory | None = None
    """The agent's steps (every step of a multi-step task, in order)."""
    agent_output: str = ""
    """The agent's output, cut to its tail: the result's `answer`."""

"""The result of one job: one JSON line in `<out>/<campaign>.jsonl`, written by the collector."""

from __future__ import annotations

from datetime import datetime
from enum import StrEnum
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from evalrelay.bridge.prompt.request import PromptRequest
from evalrelay.bridge.results.changes import WorkspaceChanges
from evalrelay.bridge.results.trajectory import Trajectory


class Status(StrEnum):
    OK = "ok"
    MODEL_FAILURE = "model_failure"
    """The model answered, but not usefully (refusal, empty or truncated answer)."""
    INFRA_ERROR = "infra_error"
    """Something other than the model failed: network, server, configuration, agent crash."""
    RATE_LIMITED = "rate_limited"
    QUOTA_EXHAUSTED = "quota_exhausted"
    TIMEOUT = "timeout"
    CANCELLED = "cancelled"
    INVALID_INPUT = "invalid_input"
    """The vendor refused the request itself (400/404)."""

    @property
    def is_scored(self) -> bool:
        """Only answers the model is responsible for enter scores."""
        return self in (Status.OK, Status.MODEL_FAILURE)


class ErrorInfo(BaseModel):
    model_config = ConfigDict(extra="forbid")

    kind: str
    message: str


class AttemptSummary(BaseModel):
    """An earlier attempt of the same job, kept when the job is retried."""

    model_config = ConfigDict(extra="forbid")

    attempt: int
    status: Status
    error: ErrorInfo | None = None
    worker: str | None = None
    finished_at: datetime | None = None


class Usage(BaseModel):
    model_config = ConfigDict(extra="allow")

    input_tokens: int | None = None
    output_tokens: int | None = None
    cached_input_tokens: int | None = None
    """Of the input tokens, those the vendor read from its prompt cache (billed lower)."""


class Cost(BaseModel):
    """What a result's calls to its target cost, in US dollars, and who says so."""

    model_config = ConfigDict(extra="forbid")

    usd: float
    source: Literal["vendor", "genai-prices"]
    """`vendor` when the vendor (or agent) reported it, else priced from the tokens with
    the `genai-prices` database of the worker that ran the job."""


class EvaluatorResult(BaseModel):
    """What one evaluator made of one answer."""

    model_config = ConfigDict(extra="forbid")

    name: str
    type: str
    score: float | None
    """Null when the evaluator could not judge the answer (see `error`)."""
    weight: float = 1.0
    passed: bool | None = None
    """The evaluator's own pass, where it reports one apart from its score (a script's or
    judge's `pass`, a promptfoo assertion set's threshold); promptfoo grading reads it."""
    hits: list[str] = Field(default_factory=list)
    misses: list[str] = Field(default_factory=list)
    reasoning: str | None = None
    details: dict[str, Any] = Field(default_factory=dict)
    """The judge's model and attempts, a script's stderr, and the like."""
    error: str | None = None
    """Why this evaluator gave no score; the job's status is then `infra_error`."""
    usage: Usage | None = None
    """An LLM judge's tokens, over all its tries: never in the result's `usage`."""
    cost: Cost | None = None
    """What those judge calls cost: never in the result's `cost`."""


TurnStatus = Literal["ok", "model_failure", "skipped"]


class TurnResult(BaseModel):
    model_config = ConfigDict(extra="forbid")

    turn: int
    """1 for the first turn."""
    input: str
    """The user message of this turn, as sent."""
    status: TurnStatus
    """`skipped`: not sent, because an earlier turn failed under `on_turn_failure: stop`
    (or, in a regrade, because no answer to it was recorded)."""
    answer: str | None = None
    score: float | None = None
    """A turn with no evaluators scores 1 and a skipped one 0, as in AgentV; null when an
    evaluator could not judge the answer."""
    passed: bool | None = None
    hits: list[str] = Field(default_factory=list)
    misses: list[str] = Field(default_factory=list)
    reasoning: str | None = None
    evaluator_results: list[EvaluatorResult] = Field(default_factory=list)
    usage: Usage | None = None
    error: str | None = None
    """Why the model's answer is a failure (a refusal, an empty answer), or why skipped."""


class TaskStep(BaseModel):
    """One step of a multi-step container task (Harbor's `[[steps]]`), as its verifier graded it."""

    model_config = ConfigDict(extra="forbid")

    name: str
    reward: float | None = None
    """The step's reward (its reward file's `reward`); null when the step was skipped, or
    ran but has no reward (no reward file, tests that overran, a setup that failed)."""
    rewards: dict[str, float] = Field(default_factory=dict)
    """Every number of the step's reward file, by name (`{"reward": x}` from reward.txt)."""
    skipped: bool = False
    """Not run: an earlier step's reward fell below that step's `min_reward`."""


class TaskTimings(BaseModel):
    """Seconds of each phase of a container task's trial; null for a phase that did not run."""

    model_config = ConfigDict(extra="forbid")

    build: float | None = None
    """Building (or finding) the environment's image; near zero when this host had it."""
    setup: float | None = None
    """Starting the container and putting the task's files in it."""
    agent: float | None = None
    verifier: float | None = None


class Result(BaseModel):
    model_config = ConfigDict(extra="forbid")

    campaign_id: str
    job_id: str
    case_id: str
    dataset: str
    target: str
    repeat: int = 0
    attempt: int = 1
    conversation_id: str | None = None
    """The case's `conversation_id`, a label of the author's, kept for grouping results."""
    metadata: dict[str, Any] = Field(default_factory=dict)
    """The case's `metadata`, and AgentV's `tags`, `governance` and `environment`."""
    status: Status
    answer: str | None = None
    score: float | None = None
    """Null when the case was not graded."""
    hits: list[str] = Field(default_factory=list)
    misses: list[str] = Field(default_factory=list)
    reasoning: str | None = None
    passed: bool | None = None
    """Score at or above the case's pass threshold; null when not graded."""
    evaluator_results: list[EvaluatorResult] = Field(default_factory=list)
    expected_outcome: str | None = None
    reference_answer: str | None = None
    """The last expected message, rendered: what the answer was compared with."""
    raw_request: PromptRequest
    usage: Usage | None = None
    trajectory: Trajectory | None = None
    """An agent's steps on the way to the answer, whatever the agent."""
    workspace_changes: WorkspaceChanges | None = None
    """What an agent changed in its workspace."""
    cost: Cost | None = None
    """Null when neither the vendor said nor the price database knows the model."""
    judge_usage: Usage | None = None
    """The LLM judges' tokens for this result, apart from the target's `usage`."""
    judge_cost: Cost | None = None
    """What the judge calls cost, apart from the target's `cost`; null when no judge was
    called or none could be priced."""
    started_at: datetime
    finished_at: datetime
    duration_ms: int
    worker: str
    error: ErrorInfo | None = None
    artifacts: dict[str, Any] = Field(default_factory=dict)
    """What the provider kept of the run. A container task's trial keeps its files under
    the results folder: `files` lists their paths relative to the results file's folder
    (`<campaign>/<task>__<job>/`: `agent/`, `verifier/` with `test-stdout.txt`,
    `artifacts/`), and `trial_dir` names that folder."""
    attempts: list[AttemptSummary] = Field(default_factory=list)
    turns: list[TurnResult] | None = None
    """A conversation-mode case's turns, each with its answer and its own verdict."""
    regraded_from: str | None = None
    """The campaign whose recorded answer this result grades again (`evalrelay regrade`)."""
    rewards: dict[str, float] | None = None
    """A container task's rewards by name: every key of its `reward.json`, or `{"reward": x}`
    from `reward.txt` (a multi-step task: each name's mean over the steps that ran, or the
    final step's); `score` is the trial's reward, 0 when it has none (then `rewards` is
    null). Null for other jobs."""
    steps: list[TaskStep] | None = None
    """A multi-step container task's steps, in order; null for single-step tasks."""
    timings: TaskTimings | None = None
    """A container task's seconds per phase (build, setup, agent, verifier)."""

    def spent_usd(self) -> float | None:
        """What the result cost its campaign's budget: the answer and its judges together,
        so that a budget counts every call it paid for; None when neither was priced."""
        costs = [c.usd for c in (self.cost, self.judge_cost) if c is not None]
        return sum(costs) if costs else None

    def summary(self) -> AttemptSummary:
        return AttemptSummary(
            attempt=self.attempt,
            status=self.status,
            error=self.error,
            worker=self.worker,
            finished_at=self.finished_at,
        )

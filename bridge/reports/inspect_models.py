"""The parts of Inspect AI's eval log (`inspect_ai.log.EvalLog`, schema version 2) that an
evalrelay export fills, as models of our own: `inspect_ai` is a dev-only dependency.

Field names, types and which fields are required follow `inspect_ai/log/_log.py`, its
`model/` messages and outputs, `scorer/` scores and `_util/error.py` (inspect_ai 0.3.285).
Inspect writes its logs without null fields, and so do we (`as_json`). A score that could
not be given is NaN, Inspect's sentinel that metrics skip, written as the JSON constant
`NaN` as Inspect writes it (`ser_json_inf_nan="constants"`).
"""

from __future__ import annotations

import json
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field

LOG_SCHEMA_VERSION = 2
SUMMARY_TEXT = 5120
SUMMARY_VALUE = 1024
"""As Inspect thins a sample into its summary: texts to 5 KB, metadata values to 1 KB."""

StopReason = Literal[
    "stop", "max_tokens", "model_length", "tool_calls", "content_filter", "unknown"
]
EvalStatus = Literal["started", "success", "cancelled", "error"]


class InspectModel(BaseModel):
    model_config = ConfigDict(extra="forbid", ser_json_inf_nan="constants")

    def as_json(self) -> bytes:
        return self.model_dump_json(exclude_none=True).encode()


class ToolCall(InspectModel):
    id: str
    function: str
    arguments: dict[str, Any]
    type: Literal["function"] = "function"


class SystemMessage(InspectModel):
    id: str | None = None
    role: Literal["system"] = "system"
    content: str
    source: Literal["input", "generate"] | None = None


class UserMessage(InspectModel):
    id: str | None = None
    role: Literal["user"] = "user"
    content: str
    source: Literal["input", "generate"] | None = None


class AssistantMessage(InspectModel):
    id: str | None = None
    role: Literal["assistant"] = "assistant"
    content: str
    source: Literal["input", "generate"] | None = None
    tool_calls: list[ToolCall] | None = None
    model: str | None = None


class ToolMessage(InspectModel):
    id: str | None = None
    role: Literal["tool"] = "tool"
    content: str
    source: Literal["input", "generate"] | None = None
    tool_call_id: str | None = None
    function: str | None = None


ChatMessage = Annotated[
    SystemMessage | UserMessage | AssistantMessage | ToolMessage, Field(discriminator="role")
]


class ModelUsage(InspectModel):
    input_tokens: int = 0
    output_tokens: int = 0
    total_tokens: int = 0
    input_tokens_cache_write: int | None = None
    input_tokens_cache_read: int | None = None
    reasoning_tokens: int | None = None
    total_cost: float | None = None

    def plus(self, other: ModelUsage) -> ModelUsage:
        """The two added up, as Inspect adds a sample's usage into the eval's."""
        return ModelUsage(**{name: _sum(self, other, name) for name in ModelUsage.model_fields})


def _sum(one: ModelUsage, other: ModelUsage, name: str) -> Any:
    a, b = getattr(one, name), getattr(other, name)
    return b if a is None else a if b is None else a + b


class ChatCompletionChoice(InspectModel):
    message: AssistantMessage
    stop_reason: StopReason = "unknown"


class ModelOutput(InspectModel):
    model: str = ""
    choices: list[ChatCompletionChoice] = Field(default_factory=list)
    completion: str = ""
    usage: ModelUsage | None = None
    time: float | None = None
    error: str | None = None


class Score(InspectModel):
    value: float
    answer: str | None = None
    explanation: str | None = None
    reason: str | None = None
    metadata: dict[str, Any] | None = None

    def thinned(self) -> Score:
        return self.model_copy(
            update={
                "answer": self.answer and _thin(self.answer, SUMMARY_VALUE),
                "explanation": self.explanation and _thin(self.explanation, SUMMARY_VALUE),
                "metadata": self.metadata and _thin_metadata(self.metadata),
            }
        )


class EvalError(InspectModel):
    """Inspect's `EvalError`; the viewer shows `traceback_ansi`. A result has no traceback,
    so all three carry its error, as the viewer itself fills them for a summary's error."""

    message: str
    traceback: str
    traceback_ansi: str

    @classmethod
    def of(cls, text: str) -> EvalError:
        return cls(message=text, traceback=text, traceback_ansi=text)


class ModelEvent(InspectModel):
    """The call to the target, as the transcript (the viewer's first tab) shows it."""

    event: Literal["model"] = "model"
    uuid: str | None = None
    timestamp: str
    working_start: float = 0.0
    model: str
    input: list[ChatMessage]
    tools: list[dict[str, Any]] = Field(default_factory=list)
    tool_choice: Literal["auto", "none"] = "none"
    config: dict[str, Any] = Field(default_factory=dict)
    output: ModelOutput
    error: str | None = None
    completed: str | None = None
    working_time: float | None = None


class ScoreEvent(InspectModel):
    event: Literal["score"] = "score"
    uuid: str | None = None
    timestamp: str
    working_start: float = 0.0
    score: Score
    target: str | None = None
    scorer: str | None = None


class ErrorEvent(InspectModel):
    event: Literal["error"] = "error"
    uuid: str | None = None
    timestamp: str
    working_start: float = 0.0
    error: EvalError


class ToolCallError(InspectModel):
    type: Literal["unknown"] = "unknown"
    message: str


class ToolEvent(InspectModel):
    """One step of an agent's trajectory: a tool it called, with what came back."""

    event: Literal["tool"] = "tool"
    uuid: str | None = None
    timestamp: str
    working_start: float = 0.0
    type: Literal["function"] = "function"
    id: str
    function: str
    arguments: dict[str, Any]
    result: str = ""
    truncated: tuple[int, int] | None = None
    error: ToolCallError | None = None
    events: list[Any] = Field(default_factory=list)
    working_time: float | None = None
    agent: str | None = None
    failed: bool | None = None


Event = Annotated[ModelEvent | ToolEvent | ScoreEvent | ErrorEvent, Field(discriminator="event")]


class EvalSample(InspectModel):
    id: str
    epoch: int
    input: list[ChatMessage]
    target: str
    messages: list[ChatMessage] = Field(default_factory=list)
    output: ModelOutput = Field(default_factory=ModelOutput)
    scores: dict[str, Score] | None = None
    metadata: dict[str, Any] = Field(default_factory=dict)
    store: dict[str, Any] = Field(default_factory=dict)
    events: list[Event] = Field(default_factory=list)
    model_usage: dict[str, ModelUsage] = Field(default_factory=dict)
    started_at: str | None = None
    completed_at: str | None = None
    total_time: float | None = None
    working_time: float | None = None
    uuid: str | None = None
    error: EvalError | None = None
    error_retries: list[EvalError] | None = None
    attachments: dict[str, str] = Field(default_factory=dict)

    def summary(self) -> EvalSampleSummary:
        """The sample as `summaries.json` lists it, thinned as Inspect's `summary()` does."""
        return EvalSampleSummary(
            id=self.id,
            epoch=self.epoch,
            input=[m.model_copy(update={"content": _thin(m.content)}) for m in self.input],
            target=_thin(self.target),
            metadata=_thin_metadata(self.metadata),
            scores={name: score.thinned() for name, score in self.scores.items()}
            if self.scores
            else None,
            model_usage=self.model_usage,
            started_at=self.started_at,
            completed_at=self.completed_at,
            total_time=self.total_time,
            working_time=self.working_time,
            uuid=self.uuid,
            error=self.error.message if self.error else None,
            retries=len(self.error_retries) if self.error_retries else None,
            message_count=len(self.messages),
        )


class EvalSampleSummary(InspectModel):
    """What the viewer lists a sample by (`summaries.json`), without its conversation."""

    id: str
    epoch: int
    input: list[ChatMessage]
    target: str
    metadata: dict[str, Any] = Field(default_factory=dict)
    scores: dict[str, Score] | None = None
    model_usage: dict[str, ModelUsage] = Field(default_factory=dict)
    started_at: str | None = None
    completed_at: str | None = None
    total_time: float | None = None
    working_time: float | None = None
    uuid: str | None = None
    error: str | None = None
    retries: int | None = None
    completed: bool = True
    message_count: int | None = None


class EvalDataset(InspectModel):
    name: str | None = None
    location: str | None = None
    samples: int | None = None
    sample_ids: list[str] | None = None
    """`read_eval_log_samples` walks these (times `config.epochs`); without them it refuses."""


class EvalConfig(InspectModel):
    epochs: int | None = None
    fail_on_error: bool | None = None
    log_samples: bool | None = None


class EvalMetricDefinition(InspectModel):
    name: str


class EvalScorer(InspectModel):
    name: str
    metrics: list[EvalMetricDefinition] | None = None
    metadata: dict[str, Any] | None = None


class EvalSpec(InspectModel):
    eval_id: str
    run_id: str
    created: str
    task: str
    task_id: str
    task_version: int = 0
    dataset: EvalDataset
    model: str
    config: EvalConfig
    packages: dict[str, str] = Field(default_factory=dict)
    metadata: dict[str, Any] | None = None
    scorers: list[EvalScorer] | None = None


class EvalPlanStep(InspectModel):
    solver: str
    params: dict[str, Any] = Field(default_factory=dict)


class EvalPlan(InspectModel):
    name: str = "plan"
    steps: list[EvalPlanStep] = Field(default_factory=list)
    config: dict[str, Any] = Field(default_factory=dict)
    """Inspect's `GenerateConfig`; evalrelay's generation settings live in its targets."""


class EvalMetric(InspectModel):
    name: str
    value: float


class EvalScore(InspectModel):
    name: str
    scorer: str
    scored_samples: int | None = None
    unscored_samples: int | None = None
    params: dict[str, Any] = Field(default_factory=dict)
    metrics: dict[str, EvalMetric] = Field(default_factory=dict)


class EvalResults(InspectModel):
    total_samples: int = 0
    completed_samples: int = 0
    scores: list[EvalScore] = Field(default_factory=list)


class EvalStats(InspectModel):
    started_at: str = ""
    completed_at: str = ""
    model_usage: dict[str, ModelUsage] = Field(default_factory=dict)


class LogStart(InspectModel):
    """`_journal/start.json` of a `.eval` log."""

    version: int = LOG_SCHEMA_VERSION
    eval: EvalSpec
    plan: EvalPlan


class EvalLogHeader(InspectModel):
    """An `EvalLog` without its samples: `header.json` of a `.eval` log, and the start of a
    `.json` one. The order of the fields is the file's, which Inspect's streaming header
    reader relies on: everything before `samples`."""

    version: int = LOG_SCHEMA_VERSION
    status: EvalStatus
    eval: EvalSpec
    plan: EvalPlan
    results: EvalResults | None = None
    stats: EvalStats


def _thin(text: str, limit: int = SUMMARY_TEXT) -> str:
    return text if len(text) <= limit else text[:limit] + "...\n(content truncated)"


def _thin_metadata(metadata: dict[str, Any]) -> dict[str, Any]:
    return {key: _thin_value(value) for key, value in metadata.items()}


def _thin_value(value: Any) -> Any:
    if isinstance(value, str):
        return _thin(value, SUMMARY_VALUE)
    if value is None or isinstance(value, int | float | bool):
        return value
    if len(json.dumps(value, default=str)) <= SUMMARY_VALUE:
        return value
    return "Key removed from summary (> 1k)"

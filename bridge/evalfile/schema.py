"""The eval file as users write it (AgentV's `agentv-eval-v2` format), as pydantic models.

Everything here is `extra="forbid"`: a typo is an error at its line, never a silently
ignored key. Paths in `file` segments stay as written; `bridge.evalfile.files` resolves them.
"""

from __future__ import annotations

import json
from typing import Annotated, Any, ClassVar, Literal

from pydantic import (
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    field_validator,
    model_validator,
)

from evalrelay.bridge.evalfile.evaluators import EvaluatorSpec, RubricEvaluator, Rubrics
from evalrelay.bridge.evalfile.limits import Repeats, Seconds
from evalrelay.bridge.evalfile.tools import ToolChoice, ToolList

Role = Literal["system", "user", "assistant", "tool"]


class UserModel(BaseModel):
    """Base of every model a user writes by hand."""

    model_config = ConfigDict(extra="forbid", populate_by_name=True, frozen=True)


class TextSegment(UserModel):
    type: Literal["text"]
    value: str


class FileSegment(UserModel):
    type: Literal["file"]
    value: str = Field(min_length=1)
    """Path as written: from the eval file's folder (or a parent), or `/`-rooted at the project."""


Segment = Annotated[TextSegment | FileSegment, Field(discriminator="type")]


def _as_segments(value: Any) -> Any:
    """A string, or a bare string inside the list, is a text segment; so is an object
    written as the whole content (AgentV sends it as its JSON, indented by two)."""
    if isinstance(value, str):
        return [{"type": "text", "value": value}]
    if isinstance(value, dict):
        return [{"type": "text", "value": json.dumps(value, indent=2, ensure_ascii=False)}]
    if isinstance(value, list):
        return [{"type": "text", "value": v} if isinstance(v, str) else v for v in value]
    raise ValueError("content must be a string or a list of {type: text|file, value} segments")


Content = Annotated[list[Segment], BeforeValidator(_as_segments)]


def _trace_style(value: Any) -> Any:
    """AgentV's trace-style call `{tool, input, output}` is a call with its output."""
    if isinstance(value, dict) and "tool" in value and "name" not in value:
        renamed = {"tool": "name", "input": "arguments"}
        return {renamed.get(k, k): v for k, v in value.items()}
    return value


class ToolCall(UserModel):
    id: str | None = None
    """Needed when a `tool` message answers the call (its `tool_call_id`)."""
    name: str
    arguments: dict[str, Any] = Field(default_factory=dict)
    """The call's arguments; a JSON object written as a string is accepted too."""
    output: Any = None
    """What the tool returned, in trace-style expected calls."""

    @field_validator("arguments", mode="before")
    @classmethod
    def _parse_json_string(cls, value: Any) -> Any:
        if isinstance(value, str):
            try:
                return json.loads(value) if value.strip() else {}
            except json.JSONDecodeError as exc:
                raise ValueError(f"arguments is not a JSON object: {exc.msg}") from None
        return value


class MessageBase(UserModel):
    name: str | None = None
    """Who speaks (a participant's or a tool's name); kept with the message."""


class SystemMessage(MessageBase):
    role: Literal["system"] = "system"
    content: Content


class UserMessage(MessageBase):
    role: Literal["user"] = "user"
    content: Content


class AssistantMessage(MessageBase):
    role: Literal["assistant"] = "assistant"
    content: Content = Field(default_factory=list)
    tool_calls: list[Annotated[ToolCall, BeforeValidator(_trace_style)]] = Field(
        default_factory=list
    )


class ToolMessage(MessageBase):
    role: Literal["tool"] = "tool"
    content: Content = Field(default_factory=list)
    tool_call_id: str | None = None
    """Links the output to an assistant tool call; without it the turn is plain transcript text."""


InputMessage = Annotated[
    SystemMessage | UserMessage | AssistantMessage | ToolMessage, Field(discriminator="role")
]


class Execution(UserModel):
    """AgentV's `execution:` block: where a case runs and how it is graded."""

    target: str | None = None
    targets: list[str] | None = Field(default=None, min_length=1)
    """Several targets: each case runs on every one of them, in one campaign."""
    evaluators: list[EvaluatorSpec] | None = None

    def target_names(self) -> list[str]:
        return list(self.targets or ([self.target] if self.target else []))


def _as_text(value: Any) -> Any:
    """A turn written as an object is sent as its JSON, as AgentV sends it."""
    if isinstance(value, (dict, list)):
        return json.dumps(value, indent=2, ensure_ascii=False)
    return value


class ConversationTurn(UserModel):
    """One user message of a conversation-mode case; the target writes the answer."""

    input: Annotated[str, BeforeValidator(_as_text)]
    expected_output: Annotated[str | None, BeforeValidator(_as_text)] = None
    """A reference answer for this turn's evaluators; never put in the history."""
    evaluators: list[EvaluatorSpec] | None = None
    """This turn's own evaluators; a turn with none scores 1, as in AgentV."""


class EvalCase(UserModel):
    id: str = Field(min_length=1)
    outcome: str | None = None
    """Natural-language success criteria, used by the LLM judge (`expected_outcome`,
    AgentV's later name, wins when both are written)."""
    expected_outcome: str | None = None
    description: str | None = None
    """Free text for the author, as AgentV has it; not sent anywhere."""
    input_messages: list[InputMessage] = Field(min_length=1)
    expected_messages: list[InputMessage] = Field(default_factory=list)
    conversation_id: str | None = None
    metadata: dict[str, Any] = Field(default_factory=dict)
    """Free data of the author's, copied into every result of the case."""
    target: str | None = None
    execution: Execution | None = None
    evaluators: list[EvaluatorSpec] | None = None
    evaluator: Literal["llm_judge"] | None = None
    """AgentV's default evaluator kind; `llm_judge` is the only one, and ours too."""
    rubrics: Rubrics | None = None
    """Criteria (strings, or `{id, description, weight, required}`): a `rubric` evaluator
    run before the others, as AgentV prepends it."""
    system_prompt: str | None = None
    tools: ToolList | None = None
    """Functions offered to an API target, added to the file's (see `merged_tools`)."""
    tool_choice: ToolChoice | None = None
    """`auto`, `none`, `required` or `{name}`; wins over the file's."""
    repeats: Repeats | None = None
    timeout_seconds: Seconds | None = None
    threshold: float | None = Field(default=None, ge=0.0, le=1.0)
    """The score at which this case passes (default: the file's, then 0.8)."""
    note: str | None = None
    """Free text for the author; ignored."""
    mode: Literal["conversation"] | None = None
    """`conversation`: the `turns` are sent one by one, each with the target's own earlier
    answers as history, and each graded by its own evaluators."""
    turns: list[ConversationTurn] | None = Field(default=None, min_length=1)
    aggregation: Literal["mean", "min", "max"] | None = None
    """How the turns' scores (and the whole conversation's) make the case's: `mean`."""
    on_turn_failure: Literal["continue", "stop"] | None = None
    """`stop`: a turn below the threshold ends the conversation; later turns score 0."""

    @model_validator(mode="after")
    def _turns_need_conversation_mode(self) -> EvalCase:
        if self.mode == "conversation" and not self.turns:
            raise ValueError("`mode: conversation` needs `turns`, a list of user messages")
        if self.mode is None and (self.turns or self.aggregation or self.on_turn_failure):
            raise ValueError(
                "`turns`, `aggregation` and `on_turn_failure` need `mode: conversation`"
            )
        return self

    @field_validator("id", "conversation_id", mode="before")
    @classmethod
    def _number_as_text(cls, value: Any) -> Any:
        return str(value) if isinstance(value, int) and not isinstance(value, bool) else value

    def target_names(self) -> list[str]:
        """The case's own target, or its `execution` targets; none: the file's."""
        if self.target:
            return [self.target]
        return self.execution.target_names() if self.execution else []

    def success_criteria(self) -> str | None:
        return self.expected_outcome or self.outcome

    def evaluator_specs(self) -> list[EvaluatorSpec] | None:
        """As AgentV chooses: `execution.evaluators`, else `evaluators` (whole lists)."""
        if self.execution and self.execution.evaluators is not None:
            return self.execution.evaluators
        return self.evaluators

    def rubric_evaluator(self) -> RubricEvaluator | None:
        if not self.rubrics:
            return None
        return RubricEvaluator(type="rubric", name="rubric", rubrics=self.rubrics)


class EvalFile(UserModel):
    DOCUMENT_NEEDS: ClassVar[str] = (
        "an eval file needs `evalcases:` (or AgentV's `tests:`) with a list of cases"
    )
    """Said of an empty file: a suite in AgentV's shape is translated before validation,
    so the required keys alone would not tell it."""

    schema_: str | None = Field(default=None, alias="$schema")
    """Accepted for AgentV files (`agentv-eval-v2`) and otherwise ignored."""
    description: str | None = None
    target: str | None = None
    execution: Execution | None = None
    """The file's default target and evaluators, AgentV's later spelling."""
    dataset: str | None = None
    system_prompt: str | None = None
    tools: ToolList | None = None
    """Functions offered to an API target by every case of the file."""
    tool_choice: ToolChoice | None = None
    evaluators: list[EvaluatorSpec] | None = None
    evaluator: Literal["llm_judge"] | None = None
    repeats: Repeats | None = None
    timeout_seconds: Seconds | None = None
    threshold: float | None = Field(default=None, ge=0.0, le=1.0)
    """The score at which a case passes (default: `pass_threshold` of evalrelay.yaml)."""
    grading: Literal["evalrelay", "promptfoo"] = "evalrelay"
    """`promptfoo`: graded as promptfoo grades a test. A case passes when every evaluator
    passes (each by its own rule: a judge's `pass`, a script's returned number above 0),
    or, when the case or file sets `threshold`, when the weighted score reaches it; API
    targets get no default system prompt. promptfoo configs are read this way."""
    evalcases: list[EvalCase] = Field(min_length=1)

    def target_names(self) -> list[str]:
        """`execution.targets` or `execution.target` win over the older top-level `target`,
        as in AgentV."""
        found = self.execution.target_names() if self.execution else []
        return found or ([self.target] if self.target else [])

    def evaluator_specs(self) -> list[EvaluatorSpec] | None:
        if self.execution and self.execution.evaluators is not None:
            return self.execution.evaluators
        return self.evaluators

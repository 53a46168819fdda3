"""A conversation-mode case as a job carries it: each turn's user message, reference and
evaluators (resolved, as the case's are), and how the turns' verdicts combine. Planning
them from a case is `bridge.planning.jobs.conversation_plan`."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from evalrelay.bridge.evalfile.evaluators import EvaluatorSpec


class TurnPlan(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    input: str
    reference_answer: str | None = None
    evaluators: list[EvaluatorSpec] = Field(default_factory=list)


class ConversationPlan(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    turns: list[TurnPlan] = Field(min_length=1)
    aggregation: Literal["mean", "min", "max"] = "mean"
    on_turn_failure: Literal["continue", "stop"] = "continue"

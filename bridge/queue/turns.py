"""A conversation-mode case as a job carries it: each turn's user message, reference and
evaluators (resolved, as the case's are), and how the turns' verdicts combine."""

from __future__ import annotations

from collections.abc import Callable
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from bridge.evalfile.evaluators import EvaluatorSpec
from bridge.evalfile.schema import EvalCase


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


def conversation_plan(
    case: EvalCase, resolve: Callable[[EvaluatorSpec], EvaluatorSpec]
) -> ConversationPlan | None:
    """The case's conversation, None when it is not in conversation mode."""
    if case.mode != "conversation" or not case.turns:
        return None
    return ConversationPlan(
        turns=[
            TurnPlan(
                input=turn.input,
                reference_answer=turn.expected_output,
                evaluators=[resolve(e) for e in turn.evaluators or []],
            )
            for turn in case.turns
        ],
        aggregation=case.aggregation or "mean",
        on_turn_failure=case.on_turn_failure or "continue",
    )


def turn_evaluators(plan: ConversationPlan | None) -> list[EvaluatorSpec]:
    """Every evaluator of every turn, for the checks a job's evaluators get (judges)."""
    return [e for turn in (plan.turns if plan else []) for e in turn.evaluators]

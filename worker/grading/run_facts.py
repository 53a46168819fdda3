"""What evaluators may read besides the answer: the tool calls, usage, cost and time of
the run that produced it."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, Field

from evalrelay.bridge.results.result import Usage


class RunFacts(BaseModel):
    tool_calls: list[dict[str, Any]] = Field(default_factory=list)
    """`{name, arguments}` per call, in the order the model made them."""
    usage: Usage | None = None
    cost_usd: float | None = None
    duration_ms: int | None = None
    llm_calls: int | None = None
    workspace: str | None = None
    """An agent's workspace folder on this worker (workspace evaluators look into it)."""

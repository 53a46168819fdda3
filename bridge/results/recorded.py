"""An answer recorded in a finished campaign, carried by a `regrade` job in place of a
call to the target: the worker grades it with the eval file's current evaluators."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from evalrelay.bridge.results.changes import WorkspaceChanges
from evalrelay.bridge.results.result import ErrorInfo, Result, Status, TurnResult, Usage
from evalrelay.bridge.results.trajectory import Trajectory


class Recorded(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    campaign_id: str
    """The campaign the answer was recorded in."""
    status: Status
    answer: str | None = None
    error: ErrorInfo | None = None
    usage: Usage | None = None
    duration_ms: int = 0
    artifacts: dict[str, Any] = Field(default_factory=dict)
    """As recorded: the tool calls the target made (`tool_calls`), its model, its calls."""
    turns: list[TurnResult] | None = None
    """A conversation's turns as they were sent and answered."""
    trajectory: Trajectory | None = None
    """An agent's steps, as recorded: what trajectory evaluators read."""
    workspace_changes: WorkspaceChanges | None = None

    @classmethod
    def of(cls, result: Result) -> Recorded:
        return cls(
            campaign_id=result.campaign_id,
            status=result.status,
            answer=result.answer,
            error=result.error,
            usage=result.usage,
            duration_ms=result.duration_ms,
            artifacts=result.artifacts,
            turns=result.turns,
            trajectory=result.trajectory,
            workspace_changes=result.workspace_changes,
        )

    def tool_calls(self) -> list[dict[str, Any]]:
        """An API target's calls (`artifacts.tool_calls`), else an agent's steps."""
        calls = self.artifacts.get("tool_calls")
        if isinstance(calls, list):
            return list(calls)
        return self.trajectory.tool_calls() if self.trajectory else []

"""What an agent did on its way to the answer, the same shape whatever the agent.

Codex, Claude Code and Copilot CLI each report their tool calls in an event stream of
their own; the worker turns each into a `Trajectory`: the steps in the order the agent
took them, each with the agent's own tool name, a `kind` shared by every agent (so one
expectation reads the same against all of them), its arguments, its output (cut to a
size limit), how long it took and what it cost where the agent says. The result line
keeps it as `trajectory`; the whole result is masked of secrets before it leaves the
worker, the trajectory with it.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

StepKind = Literal["read", "command", "edit", "search", "web", "tool"]
"""`read` a file, run a `command`, `edit` files, `search` files, reach the `web`, or
any other `tool` (MCP tools, task lists)."""

OUTPUT_CHARS = 4_000
"""A step's output is kept up to this many characters (its head and its tail)."""

ARGUMENT_CHARS = 4_000
"""A text argument (a file written whole, a patch) is kept up to this many characters."""

MOST_STEPS = 500
"""Steps beyond this many are counted, not kept."""


class TrajectoryStep(BaseModel):
    model_config = ConfigDict(extra="forbid")

    tool: str
    """The agent's own name for the tool (`Read`, `bash`, `command_execution`)."""
    kind: StepKind
    arguments: dict[str, Any] = Field(default_factory=dict)
    output: str | None = None
    output_chars_cut: int = 0
    """How many characters of the output the middle cut removed."""
    ok: bool | None = None
    """Whether the tool succeeded, where the agent says."""
    paths: list[str] = Field(default_factory=list)
    """The files the step read or changed, as the agent named them."""
    duration_ms: int | None = None
    usage: dict[str, int] | None = None
    """Tokens of the model call that asked for this step (`input_tokens`, `output_tokens`
    and the like), where the agent reports them."""


class Trajectory(BaseModel):
    model_config = ConfigDict(extra="forbid")

    agent: str
    """Which event stream it was read from: `codex`, `claude`, `copilot`, `vscode`."""
    steps: list[TrajectoryStep] = Field(default_factory=list)
    steps_not_kept: int = 0
    model_calls: int | None = None
    usage: dict[str, int] | None = None
    """The run's tokens by kind, where the agent reports them."""
    cost_usd: float | None = None
    duration_ms: int | None = None

    def tool_calls(self) -> list[dict[str, Any]]:
        """The steps as the `{name, arguments, output}` calls trajectory evaluators read."""
        return [
            {"name": s.tool, "kind": s.kind, "arguments": s.arguments, "output": s.output}
            for s in self.steps
        ]


def trimmed(text: str, limit: int = OUTPUT_CHARS) -> tuple[str, int]:
    """The text with its middle cut out past `limit` characters, and how many were cut."""
    if len(text) <= limit:
        return text, 0
    head, tail = limit * 3 // 4, limit // 4
    cut = len(text) - head - tail
    return f"{text[:head]}\n[... {cut} characters cut ...]\n{text[-tail:]}", cut


def trimmed_arguments(arguments: Any) -> dict[str, Any]:
    """Arguments as a mapping, long text values cut like outputs."""
    if not isinstance(arguments, dict):
        return {"value": arguments} if arguments is not None else {}
    return {
        key: trimmed(value, ARGUMENT_CHARS)[0] if isinstance(value, str) else value
        for key, value in arguments.items()
    }

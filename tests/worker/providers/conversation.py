"""A conversation with every kind of turn, shared by the converter tests."""

from __future__ import annotations

from evalrelay.bridge.evalfile.schema import ToolCall
from evalrelay.bridge.prompt.messages import ChatMessage

TOOL_CONVERSATION = [
    ChatMessage(role="system", content="Use tools."),
    ChatMessage(role="user", content="Weather in Paris and Rome?"),
    ChatMessage(
        role="assistant",
        content="Checking.",
        tool_calls=[
            ToolCall(id="c1", name="weather", arguments={"city": "Paris"}),
            ToolCall(id="c2", name="weather", arguments={"city": "Rome"}),
        ],
    ),
    ChatMessage(role="tool", content='{"temp": 21}', tool_call_id="c1"),
    ChatMessage(role="tool", content="sunny", tool_call_id="c2"),
    ChatMessage(role="user", content="Thanks"),
    ChatMessage(role="user", content="Which is warmer?"),
    ChatMessage(role="tool", content="log line"),
]

"""Provider-neutral chat messages: what `chat_prompt` and `api_messages` are lists of.

Vendor converters in `worker.providers` map these to each wire format; nothing here
knows a vendor.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict

from evalrelay.bridge.evalfile.schema import Role, ToolCall

DEFAULT_SYSTEM_PROMPT = "You are a careful assistant."
"""Sent as the system message when neither the case nor the target gives one (spec §1)."""


class ChatMessage(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    role: Role
    content: str
    tool_calls: list[ToolCall] | None = None
    """Assistant turns only: the calls the assistant made."""
    tool_call_id: str | None = None
    """Tool turns only: the call this message answers."""

    def as_json(self) -> dict[str, Any]:
        """`{role, content}`, plus the tool fields only when present."""
        return self.model_dump(mode="json", exclude_none=True)


def system(text: str) -> ChatMessage:
    return ChatMessage(role="system", content=text)


def user(text: str) -> ChatMessage:
    return ChatMessage(role="user", content=text)

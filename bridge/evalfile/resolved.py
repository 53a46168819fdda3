"""A case's messages with their file segments read: what the loader hands the prompt step.

Models only: resolving a `file` segment is `bridge.evalfile.files`."""

from __future__ import annotations

from collections.abc import Sequence
from typing import NamedTuple

from evalrelay.bridge.evalfile.schema import Role, ToolCall


class ResolvedFile(NamedTuple):
    display_path: str
    """The segment's value exactly as written; shown in prompts."""
    project_path: str
    """POSIX path relative to the project root; matched against guideline patterns."""
    text: str
    sha256: str
    is_guideline: bool


class Text(NamedTuple):
    value: str


Part = Text | ResolvedFile


class ResolvedMessage(NamedTuple):
    """An input message whose file segments have been read."""

    role: Role
    parts: Sequence[Part]
    tool_calls: Sequence[ToolCall] = ()
    tool_call_id: str | None = None


def is_empty(message: ResolvedMessage) -> bool:
    """No visible text and no ordinary file; guideline files alone do not count."""
    if message.tool_calls:
        return False
    return not any(
        part.value.strip() if isinstance(part, Text) else not part.is_guideline
        for part in message.parts
    )


def is_single_user_turn(messages: Sequence[ResolvedMessage]) -> bool:
    return len(messages) == 1 and messages[0].role == "user"


def has_something_to_send(messages: Sequence[ResolvedMessage]) -> bool:
    """False when the request's `question` would be empty: a lone user turn with no text and no
    file, or a conversation whose every message is empty."""
    if is_single_user_turn(messages):
        return any(
            isinstance(part, ResolvedFile) or part.value.strip() for part in messages[0].parts
        )
    return not all(is_empty(m) for m in messages)

"""Anthropic Messages: the wire converter (the provider class joins it with the API issue)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from bridge.messages import ChatMessage
from worker.providers._openai import JsonDict, untied_tool_text


def as_anthropic_messages(messages: Sequence[ChatMessage]) -> tuple[str | None, list[JsonDict]]:
    """The top-level `system` string and strictly alternating user/assistant `messages`.

    Anthropic rejects two turns of the same role in a row, so consecutive same-role
    turns merge: plain texts join with a blank line, anything else as content blocks.
    A tool output travels as a `tool_result` block in a user turn.
    """
    system = "\n\n".join(m.content for m in messages if m.role == "system") or None
    turns: list[JsonDict] = []
    for message in messages:
        if message.role == "system":
            continue
        role, content = _turn(message)
        if turns and turns[-1]["role"] == role:
            turns[-1]["content"] = _merge(turns[-1]["content"], content)
        else:
            turns.append({"role": role, "content": content})
    return system, turns


def _turn(message: ChatMessage) -> tuple[str, str | list[JsonDict]]:
    if message.role == "tool" and message.tool_call_id is None:
        return "user", untied_tool_text(message)
    if message.role == "tool":
        return "user", [
            {"type": "tool_result", "tool_use_id": message.tool_call_id, "content": message.content}
        ]
    if message.role == "assistant" and message.tool_calls:
        text = [{"type": "text", "text": message.content}] if message.content else []
        return "assistant", text + [
            {"type": "tool_use", "id": c.id, "name": c.name, "input": c.arguments}
            for c in message.tool_calls
        ]
    return message.role, message.content


def _merge(first: str | list[JsonDict], second: str | list[JsonDict]) -> str | list[JsonDict]:
    if isinstance(first, str) and isinstance(second, str):
        return f"{first}\n\n{second}"
    merged = _blocks(first)
    for block in _blocks(second):
        if block["type"] == "text" and merged and merged[-1]["type"] == "text":
            merged[-1] = {"type": "text", "text": f"{merged[-1]['text']}\n\n{block['text']}"}
        else:
            merged.append(block)
    return merged


def _blocks(content: str | list[JsonDict]) -> list[JsonDict]:
    return [{"type": "text", "text": content}] if isinstance(content, str) else content


def anthropic_body(
    model: str,
    messages: Sequence[ChatMessage],
    *,
    max_output_tokens: int,
    temperature: float | None = None,
    extra_body: dict[str, Any] | None = None,
) -> JsonDict:
    system, turns = as_anthropic_messages(messages)
    body: JsonDict = {"model": model, "max_tokens": max_output_tokens}
    if system is not None:
        body["system"] = system
    body["messages"] = turns
    if temperature is not None:
        body["temperature"] = temperature
    return {**body, **(extra_body or {})}

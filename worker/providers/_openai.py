"""The OpenAI wire formats, shared by the `openai`, `azure` and `openai-compatible` providers.

Content goes out as plain strings, never content-part arrays: some OpenAI-compatible
servers (llama.cpp's among them) reject arrays.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from bridge.evalfile.schema import ToolCall
from bridge.prompt.messages import ChatMessage

JsonDict = dict[str, Any]


def arguments_json(call: ToolCall) -> str:
    """OpenAI carries tool-call arguments as a JSON string, not an object."""
    return json.dumps(call.arguments, ensure_ascii=False)


def untied_tool_text(message: ChatMessage) -> str:
    """A tool message with no call to answer is plain transcript text, sent as a user turn."""
    return f"[Tool]: {message.content}"


def as_chat_messages(messages: Sequence[ChatMessage]) -> list[JsonDict]:
    """Chat Completions `messages`: system first, tool calls on assistant turns, `tool` replies."""
    out: list[JsonDict] = []
    for message in messages:
        if message.role == "tool" and message.tool_call_id is None:
            out.append({"role": "user", "content": untied_tool_text(message)})
        elif message.role == "tool":
            out.append(
                {"role": "tool", "tool_call_id": message.tool_call_id, "content": message.content}
            )
        elif message.role == "assistant" and message.tool_calls:
            out.append(
                {
                    "role": "assistant",
                    # "" and not null: llama.cpp's server refuses null content (HTTP 500).
                    "content": message.content,
                    "tool_calls": [
                        {
                            "id": c.id,
                            "type": "function",
                            "function": {"name": c.name, "arguments": arguments_json(c)},
                        }
                        for c in message.tool_calls
                    ],
                }
            )
        else:
            out.append({"role": message.role, "content": message.content})
    return out


def as_responses_input(messages: Sequence[ChatMessage]) -> tuple[str | None, list[JsonDict]]:
    """Responses API `instructions` (the system texts) and `input` items."""
    instructions = [m.content for m in messages if m.role == "system"]
    items: list[JsonDict] = []
    for message in messages:
        if message.role == "system":
            continue
        if message.role == "tool" and message.tool_call_id is None:
            items.append({"role": "user", "content": untied_tool_text(message)})
        elif message.role == "tool":
            items.append(
                {
                    "type": "function_call_output",
                    "call_id": message.tool_call_id,
                    "output": message.content,
                }
            )
        else:
            if message.content or not message.tool_calls:
                items.append({"role": message.role, "content": message.content})
            items += [
                {
                    "type": "function_call",
                    "call_id": c.id,
                    "name": c.name,
                    "arguments": arguments_json(c),
                }
                for c in message.tool_calls or ()
            ]
    return ("\n\n".join(instructions) or None), items


def chat_completions_body(
    model: str,
    messages: Sequence[ChatMessage],
    *,
    temperature: float | None = None,
    max_output_tokens: int | None = None,
    max_tokens_field: str = "max_completion_tokens",
    extra_body: JsonDict | None = None,
) -> JsonDict:
    body: JsonDict = {"model": model, "messages": as_chat_messages(messages)}
    if temperature is not None:
        body["temperature"] = temperature
    if max_output_tokens is not None:
        body[max_tokens_field] = max_output_tokens
    return {**body, **(extra_body or {})}


def responses_body(
    model: str,
    messages: Sequence[ChatMessage],
    *,
    temperature: float | None = None,
    max_output_tokens: int | None = None,
    extra_body: JsonDict | None = None,
) -> JsonDict:
    instructions, items = as_responses_input(messages)
    body: JsonDict = {"model": model}
    if instructions is not None:
        body["instructions"] = instructions
    body["input"] = items
    if temperature is not None:
        body["temperature"] = temperature
    if max_output_tokens is not None:
        body["max_output_tokens"] = max_output_tokens
    return {**body, **(extra_body or {})}

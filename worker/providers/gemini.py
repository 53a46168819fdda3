"""Google Gemini generateContent: the wire converter (the provider class joins it later)."""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from bridge.messages import ChatMessage
from worker.providers._openai import JsonDict, untied_tool_text


def as_gemini_contents(messages: Sequence[ChatMessage]) -> tuple[JsonDict | None, list[JsonDict]]:
    """`systemInstruction` and `contents` with roles `user` and `model`.

    Gemini names a function response by the function's name, not the call id, so each
    tool output is matched to its call. The responses to one model turn's calls travel
    together in one user turn; empty texts are not sent.
    """
    system_parts = [{"text": m.content} for m in messages if m.role == "system" and m.content]
    instruction = {"parts": system_parts} if system_parts else None
    names = {c.id: c.name for m in messages for c in m.tool_calls or ()}
    contents: list[JsonDict] = []
    for message in messages:
        if message.role == "system":
            continue
        role, parts = _content(message, names)
        if not parts:
            continue
        if (
            _is_function_response(parts)
            and contents
            and _is_function_response(contents[-1]["parts"])
        ):
            contents[-1]["parts"] += parts
        else:
            contents.append({"role": role, "parts": parts})
    return instruction, contents


def _content(message: ChatMessage, names: dict[str, str]) -> tuple[str, list[JsonDict]]:
    if message.role == "tool" and message.tool_call_id is None:
        return "user", [{"text": untied_tool_text(message)}]
    if message.role == "tool":
        call_id = message.tool_call_id or ""
        return "user", [
            {
                "functionResponse": {
                    "id": call_id,
                    "name": names.get(call_id, call_id),
                    "response": _response_object(message.content),
                }
            }
        ]
    parts: list[JsonDict] = [{"text": message.content}] if message.content else []
    parts += [
        {"functionCall": {"id": c.id, "name": c.name, "args": c.arguments}}
        for c in message.tool_calls or ()
    ]
    return ("model" if message.role == "assistant" else "user"), parts


def _response_object(text: str) -> JsonDict:
    """Gemini wants an object: a JSON object output as is, anything else under `result`."""
    try:
        value = json.loads(text)
    except json.JSONDecodeError:
        return {"result": text}
    return value if isinstance(value, dict) else {"result": value}


def _is_function_response(parts: list[JsonDict]) -> bool:
    return bool(parts) and all("functionResponse" in p for p in parts)


def gemini_body(
    messages: Sequence[ChatMessage],
    *,
    temperature: float | None = None,
    max_output_tokens: int | None = None,
    extra_body: dict[str, Any] | None = None,
) -> JsonDict:
    """The generateContent body; the model is part of the URL, not the body."""
    instruction, contents = as_gemini_contents(messages)
    body: JsonDict = {"contents": contents}
    if instruction is not None:
        body["systemInstruction"] = instruction
    config: JsonDict = {}
    if temperature is not None:
        config["temperature"] = temperature
    if max_output_tokens is not None:
        config["maxOutputTokens"] = max_output_tokens
    if config:
        body["generationConfig"] = config
    return {**body, **(extra_body or {})}

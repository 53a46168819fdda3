"""The OpenAI wire formats, shared by the `openai`, `azure` and `openai-compatible` providers.

Content goes out as plain strings, never content-part arrays: some OpenAI-compatible
servers (llama.cpp's among them) reject arrays.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from evalrelay.bridge.evalfile.schema import ToolCall
from evalrelay.bridge.evalfile.tools import NamedToolChoice, ToolChoice, ToolDefinition
from evalrelay.bridge.prompt.messages import ChatMessage

if TYPE_CHECKING:
    # The SDK's own request types check these shapes; the body is built without the SDK.
    from openai.types.chat import ChatCompletionToolChoiceOptionParam, ChatCompletionToolParam
    from openai.types.responses import FunctionToolParam, ToolChoiceFunctionParam
    from openai.types.responses.tool_choice_options import ToolChoiceOptions
    from openai.types.shared_params import FunctionDefinition

JsonDict = dict[str, Any]

SDK_FIELDS = ("tools", "tool_choice")
"""Body fields handed to the SDK by name, so that it writes them; the rest go as extra_body."""


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


def chat_tools(tools: Sequence[ToolDefinition]) -> list[ChatCompletionToolParam]:
    """Chat Completions `tools`: each function wrapped as `{type: function, function}`."""
    out: list[ChatCompletionToolParam] = []
    for tool in tools:
        function: FunctionDefinition = {"name": tool.name, "parameters": tool.parameters}
        if tool.description is not None:
            function["description"] = tool.description
        out.append({"type": "function", "function": function})
    return out


def chat_tool_choice(choice: ToolChoice) -> ChatCompletionToolChoiceOptionParam:
    if isinstance(choice, NamedToolChoice):
        return {"type": "function", "function": {"name": choice.name}}
    return choice


def responses_tools(tools: Sequence[ToolDefinition]) -> list[FunctionToolParam]:
    """Responses `tools`: flat function tools. `strict` is required there, and strict mode
    rejects most schemas (every property required, no extra ones), so it is off, as it is
    by default in Chat Completions."""
    return [
        {
            "type": "function",
            "name": tool.name,
            "description": tool.description,
            "parameters": tool.parameters,
            "strict": False,
        }
        for tool in tools
    ]


def responses_tool_choice(choice: ToolChoice) -> ToolChoiceOptions | ToolChoiceFunctionParam:
    if isinstance(choice, NamedToolChoice):
        return {"type": "function", "name": choice.name}
    return choice


def chat_completions_body(
    model: str,
    messages: Sequence[ChatMessage],
    *,
    temperature: float | None = None,
    max_output_tokens: int | None = None,
    max_tokens_field: str = "max_completion_tokens",
    extra_body: JsonDict | None = None,
    tools: Sequence[ToolDefinition] = (),
    tool_choice: ToolChoice | None = None,
) -> JsonDict:
    body: JsonDict = {"model": model, "messages": as_chat_messages(messages)}
    if tools:
        body["tools"] = chat_tools(tools)
    if tool_choice is not None:
        body["tool_choice"] = chat_tool_choice(tool_choice)
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
    tools: Sequence[ToolDefinition] = (),
    tool_choice: ToolChoice | None = None,
) -> JsonDict:
    instructions, items = as_responses_input(messages)
    body: JsonDict = {"model": model}
    if instructions is not None:
        body["instructions"] = instructions
    body["input"] = items
    if tools:
        body["tools"] = responses_tools(tools)
    if tool_choice is not None:
        body["tool_choice"] = responses_tool_choice(tool_choice)
    if temperature is not None:
        body["temperature"] = temperature
    if max_output_tokens is not None:
        body["max_output_tokens"] = max_output_tokens
    return {**body, **(extra_body or {})}

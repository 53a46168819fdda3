"""Anthropic Messages: the provider, through the official SDK, and its wire converter."""

from __future__ import annotations

import time
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from evalrelay.bridge.evalfile.tools import NamedToolChoice, ToolChoice, ToolDefinition
from evalrelay.bridge.prompt.messages import ChatMessage
from evalrelay.bridge.results.result import Usage
from evalrelay.bridge.targets.settings import AnthropicTarget
from evalrelay.worker.providers._openai import JsonDict, untied_tool_text
from evalrelay.worker.providers.api import ApiProvider, elapsed_ms, finish, no_turns
from evalrelay.worker.providers.base import ProviderOutput

if TYPE_CHECKING:
    from anthropic.types import ToolChoiceParam, ToolParam


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


def anthropic_tools(tools: Sequence[ToolDefinition]) -> list[ToolParam]:
    """Anthropic `tools`: the arguments' schema is `input_schema`."""
    out: list[ToolParam] = []
    for tool in tools:
        param: ToolParam = {"name": tool.name, "input_schema": tool.parameters}
        if tool.description is not None:
            param["description"] = tool.description
        out.append(param)
    return out


def tool_choice_to_anthropic(choice: ToolChoice) -> ToolChoiceParam:
    """Anthropic says `any` for what OpenAI calls `required`, and `tool` for a named one."""
    if isinstance(choice, NamedToolChoice):
        return {"type": "tool", "name": choice.name}
    if choice == "auto":
        return {"type": "auto"}
    if choice == "none":
        return {"type": "none"}
    return {"type": "any"}


def anthropic_body(
    model: str,
    messages: Sequence[ChatMessage],
    *,
    max_output_tokens: int,
    temperature: float | None = None,
    extra_body: dict[str, Any] | None = None,
    tools: Sequence[ToolDefinition] = (),
    tool_choice: ToolChoice | None = None,
) -> JsonDict:
    system, turns = as_anthropic_messages(messages)
    body: JsonDict = {"model": model, "max_tokens": max_output_tokens}
    if system is not None:
        body["system"] = system
    body["messages"] = turns
    if tools:
        body["tools"] = anthropic_tools(tools)
    if tool_choice is not None:
        body["tool_choice"] = tool_choice_to_anthropic(tool_choice)
    if temperature is not None:
        body["temperature"] = temperature
    return {**body, **(extra_body or {})}


class AnthropicProvider(ApiProvider):
    settings: AnthropicTarget
    sdk = "anthropic"

    def body(
        self,
        messages: Sequence[ChatMessage],
        tools: Sequence[ToolDefinition] = (),
        tool_choice: ToolChoice | None = None,
    ) -> JsonDict:
        s = self.settings
        return anthropic_body(
            s.model,
            messages,
            max_output_tokens=s.max_output_tokens,
            temperature=s.temperature,
            extra_body=s.extra_body,
            tools=tools,
            tool_choice=tool_choice,
        )

    def connect(self) -> Any:
        return self._sdk().Anthropic(**self._client_options())

    def aconnect(self) -> Any:
        return self._sdk().AsyncAnthropic(**self._client_options())

    def _client_options(self) -> dict[str, Any]:
        return {"api_key": self.api_key(), "base_url": self.settings.base_url, "max_retries": 0}

    def _sdk(self) -> Any:
        try:
            import anthropic
        except ImportError:
            raise self.missing_sdk("anthropic") from None
        return anthropic

    def send(self, client: Any, body: JsonDict, timeout: float) -> ProviderOutput:
        arguments = _arguments(body, timeout)
        began = time.monotonic()
        raw = client.messages.with_raw_response.create(**arguments)
        return _output(raw.parse(), raw.headers, began)

    async def asend(self, client: Any, body: JsonDict, timeout: float) -> ProviderOutput:
        arguments = _arguments(body, timeout)
        began = time.monotonic()
        raw = await client.messages.with_raw_response.create(**arguments)
        return _output(await raw.parse(), raw.headers, began)


def _arguments(body: JsonDict, timeout: float) -> dict[str, Any]:
    """The SDK's arguments for this body; a body with no turns is refused before sending."""
    if not body["messages"]:
        raise no_turns("Anthropic")
    # Handed to the SDK by name, so that it writes them; the rest go as extra_body.
    named: dict[str, Any] = {k: body[k] for k in ("system", "tools", "tool_choice") if k in body}
    known = ("model", "max_tokens", "messages", *named)
    return {
        "model": body["model"],
        "max_tokens": body["max_tokens"],
        "messages": body["messages"],
        "extra_body": {k: v for k, v in body.items() if k not in known},
        "timeout": timeout,
        **named,
    }


def _output(response: Any, headers: Any, began: float) -> ProviderOutput:
    """Either client's parsed message and its headers, as a `ProviderOutput`."""
    answer = "".join(block.text for block in response.content if block.type == "text")
    calls = [
        {"id": b.id, "name": b.name, "arguments": b.input}
        for b in response.content
        if b.type == "tool_use"
    ]
    return ProviderOutput(
        answer=answer,
        model=response.model,
        finish_reason=response.stop_reason,
        tool_calls=calls,
        request_id=headers.get("request-id"),
        usage=Usage(
            input_tokens=response.usage.input_tokens, output_tokens=response.usage.output_tokens
        ),
        model_failure=finish(answer, response.stop_reason, calls),
        artifacts={"latency_ms": elapsed_ms(began)},
    )

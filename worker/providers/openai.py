"""OpenAI (Chat Completions or Responses) and any OpenAI-compatible server, through the
official SDK with its own retries off. The wire converters live in `_openai.py`."""

from __future__ import annotations

import json
import time
from collections.abc import Sequence
from typing import Any

from evalrelay.bridge.evalfile.tools import ToolChoice, ToolDefinition
from evalrelay.bridge.prompt.messages import ChatMessage
from evalrelay.bridge.results.result import Usage
from evalrelay.bridge.targets.settings import OpenAICompatibleTarget, OpenAITarget
from evalrelay.worker.providers._openai import (
    SDK_FIELDS,
    JsonDict,
    chat_completions_body,
    responses_body,
)
from evalrelay.worker.providers.api import ApiProvider, elapsed_ms, finish
from evalrelay.worker.providers.base import ProviderOutput


class OpenAIProvider(ApiProvider):
    settings: OpenAITarget | OpenAICompatibleTarget
    sdk = "openai"

    def connect(self) -> Any:
        return self._sdk().OpenAI(**self.client_options())

    def aconnect(self) -> Any:
        return self._sdk().AsyncOpenAI(**self.client_options())

    def client_options(self) -> dict[str, Any]:
        """What both clients are built with: the key, where, and the SDK's retries off."""
        compatible = isinstance(self.settings, OpenAICompatibleTarget)
        return {
            "api_key": self.api_key(required=not compatible),
            "base_url": self.settings.base_url,
            "organization": getattr(self.settings, "organization", None),
            "max_retries": 0,
        }

    def _sdk(self) -> Any:
        try:
            import openai
        except ImportError:
            raise self.missing_sdk("openai") from None
        return openai

    def model_name(self) -> str:
        return self.settings.model or ""

    def body(
        self,
        messages: Sequence[ChatMessage],
        tools: Sequence[ToolDefinition] = (),
        tool_choice: ToolChoice | None = None,
    ) -> JsonDict:
        s = self.settings
        if s.api == "responses":
            return responses_body(
                self.model_name(),
                messages,
                temperature=s.temperature,
                max_output_tokens=s.max_output_tokens,
                extra_body=s.extra_body,
                tools=tools,
                tool_choice=tool_choice,
            )
        # Many OpenAI-compatible servers know only the older `max_tokens` name.
        field = "max_tokens" if isinstance(s, OpenAICompatibleTarget) else "max_completion_tokens"
        return chat_completions_body(
            self.model_name(),
            messages,
            temperature=s.temperature,
            max_output_tokens=s.max_output_tokens,
            max_tokens_field=field,
            extra_body=s.extra_body,
            tools=tools,
            tool_choice=tool_choice,
        )

    def send(self, client: Any, body: JsonDict, timeout: float) -> ProviderOutput:
        began = time.monotonic()
        raw = self._create(client).with_raw_response.create(**self._arguments(body, timeout))
        return self._output(raw.parse(), raw.headers, began)

    async def asend(self, client: Any, body: JsonDict, timeout: float) -> ProviderOutput:
        began = time.monotonic()
        raw = await self._create(client).with_raw_response.create(**self._arguments(body, timeout))
        # OpenAI's raw response parses without waiting on either client (Anthropic's does not).
        return self._output(raw.parse(), raw.headers, began)

    def _create(self, client: Any) -> Any:
        """The SDK resource this target's API calls, on either client."""
        return client.responses if self.settings.api == "responses" else client.chat.completions

    def _arguments(self, body: JsonDict, timeout: float) -> dict[str, Any]:
        """The SDK's arguments for this body: its own fields by name, the rest as extra_body."""
        named = {k: body[k] for k in SDK_FIELDS if k in body}
        main = "input" if self.settings.api == "responses" else "messages"
        fields = {k: v for k, v in body.items() if k not in ("model", main, *SDK_FIELDS)}
        return {
            "model": body["model"],
            main: body[main],
            "extra_body": fields,
            "timeout": timeout,
            **named,
        }

    def _output(self, response: Any, headers: Any, began: float) -> ProviderOutput:
        """Either client's parsed response and its headers, as a `ProviderOutput`."""
        parse = responses_output if self.settings.api == "responses" else chat_output
        output = parse(response)
        output.request_id = headers.get("x-request-id")
        output.artifacts["latency_ms"] = elapsed_ms(began)
        return output


def chat_output(response: Any) -> ProviderOutput:
    choice = response.choices[0]
    answer = choice.message.content or ""
    calls = [
        {"id": c.id, "name": c.function.name, "arguments": _arguments(c.function.arguments)}
        for c in choice.message.tool_calls or ()
    ]
    usage = response.usage
    return ProviderOutput(
        answer=answer,
        model=response.model,
        finish_reason=choice.finish_reason,
        tool_calls=calls,
        usage=Usage(
            input_tokens=usage.prompt_tokens,
            output_tokens=usage.completion_tokens,
            cached_input_tokens=getattr(usage.prompt_tokens_details, "cached_tokens", None),
        )
        if usage
        else None,
        model_failure=finish(answer, choice.finish_reason, calls),
    )


def responses_output(response: Any) -> ProviderOutput:
    answer = response.output_text or ""
    calls = [
        {"id": item.call_id, "name": item.name, "arguments": _arguments(item.arguments)}
        for item in response.output
        if item.type == "function_call"
    ]
    usage = response.usage
    return ProviderOutput(
        answer=answer,
        model=response.model,
        finish_reason=response.status,
        tool_calls=calls,
        usage=Usage(
            input_tokens=usage.input_tokens,
            output_tokens=usage.output_tokens,
            cached_input_tokens=getattr(usage.input_tokens_details, "cached_tokens", None),
        )
        if usage
        else None,
        model_failure=finish(answer, response.status, calls),
    )


def _arguments(text: str | None) -> Any:
    try:
        return json.loads(text) if text else {}
    except json.JSONDecodeError:
        return text

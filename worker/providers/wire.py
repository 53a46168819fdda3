"""The request body each API target sends, from the neutral `api_messages`.

`evalrelay render --target` shows exactly this, and the API providers send exactly this.
"""

from __future__ import annotations

from collections.abc import Sequence

from bridge.messages import ChatMessage
from bridge.target_settings import (
    AnthropicTarget,
    AzureTarget,
    GeminiTarget,
    OpenAICompatibleTarget,
    OpenAITarget,
    TargetSettings,
)
from worker.providers._openai import JsonDict, chat_completions_body, responses_body
from worker.providers.anthropic import anthropic_body
from worker.providers.gemini import gemini_body

OpenAIStyle = OpenAITarget | AzureTarget | OpenAICompatibleTarget


def request_body(settings: TargetSettings, messages: Sequence[ChatMessage]) -> JsonDict | None:
    """The vendor body for an API target; None for targets that are not HTTP APIs."""
    if isinstance(settings, OpenAITarget | AzureTarget | OpenAICompatibleTarget):
        return _openai_style(settings, messages)
    if isinstance(settings, AnthropicTarget):
        return anthropic_body(
            settings.model,
            messages,
            max_output_tokens=settings.max_output_tokens,
            temperature=settings.temperature,
            extra_body=settings.extra_body,
        )
    if isinstance(settings, GeminiTarget):
        return gemini_body(
            messages,
            temperature=settings.temperature,
            max_output_tokens=settings.max_output_tokens,
            extra_body=settings.extra_body,
        )
    return None


def _openai_style(settings: OpenAIStyle, messages: Sequence[ChatMessage]) -> JsonDict:
    model = settings.deployment_name() if isinstance(settings, AzureTarget) else settings.model
    if settings.api == "responses":
        return responses_body(
            model or "",
            messages,
            temperature=settings.temperature,
            max_output_tokens=settings.max_output_tokens,
            extra_body=settings.extra_body,
        )
    # Many OpenAI-compatible servers know only the older `max_tokens` name.
    field = (
        "max_tokens" if isinstance(settings, OpenAICompatibleTarget) else "max_completion_tokens"
    )
    return chat_completions_body(
        model or "",
        messages,
        temperature=settings.temperature,
        max_output_tokens=settings.max_output_tokens,
        max_tokens_field=field,
        extra_body=settings.extra_body,
    )

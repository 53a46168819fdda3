"""Google Gemini generateContent: the provider, through google-genai, and its wire converter."""

from __future__ import annotations

import json
import time
from collections.abc import Sequence
from typing import Any

from evalrelay.bridge.evalfile.tools import NamedToolChoice, ToolChoice, ToolDefinition
from evalrelay.bridge.prompt.messages import ChatMessage
from evalrelay.bridge.results.result import Usage
from evalrelay.bridge.targets.settings import GeminiTarget
from evalrelay.worker.providers._openai import JsonDict, untied_tool_text
from evalrelay.worker.providers.api import ApiProvider, elapsed_ms, finish, no_turns
from evalrelay.worker.providers.base import ProviderOutput


def as_gemini_contents(messages: Sequence[ChatMessage]) -> tuple[JsonDict | None, list[JsonDict]]:
    """`systemInstruction` and `contents` with roles `user` and `model`.

    Gemini names a function response by the function's name, not the call id, so each
    tool output is matched to its call. The responses to one model turn's calls travel
    together in one user turn; empty texts are not sent.
    """
    system_parts = [{"text": m.content} for m in messages if m.role == "system" and m.content]
    instruction = {"parts": system_parts} if system_parts else None
    names = {c.id or "": c.name for m in messages for c in m.tool_calls or ()}
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


def gemini_tools(tools: Sequence[ToolDefinition]) -> list[JsonDict]:
    """One `Tool` holding every function. The schema goes as `parametersJsonSchema`, which
    takes JSON Schema as written; `parameters` takes only Google's OpenAPI subset."""
    declarations = []
    for tool in tools:
        declaration: JsonDict = {"name": tool.name}
        if tool.description is not None:
            declaration["description"] = tool.description
        declaration["parametersJsonSchema"] = tool.parameters
        declarations.append(declaration)
    return [{"functionDeclarations": declarations}]


GEMINI_MODES = {"auto": "AUTO", "none": "NONE", "required": "ANY"}


def gemini_tool_config(choice: ToolChoice) -> JsonDict:
    """`toolConfig.functionCallingConfig`: `ANY` is OpenAI's `required`; a named function is
    `ANY` limited to that one name."""
    if isinstance(choice, NamedToolChoice):
        config: JsonDict = {"mode": "ANY", "allowedFunctionNames": [choice.name]}
    else:
        config = {"mode": GEMINI_MODES[choice]}
    return {"functionCallingConfig": config}


def gemini_body(
    messages: Sequence[ChatMessage],
    *,
    temperature: float | None = None,
    max_output_tokens: int | None = None,
    extra_body: dict[str, Any] | None = None,
    tools: Sequence[ToolDefinition] = (),
    tool_choice: ToolChoice | None = None,
) -> JsonDict:
    """The generateContent body; the model is part of the URL, not the body."""
    instruction, contents = as_gemini_contents(messages)
    body: JsonDict = {"contents": contents}
    if instruction is not None:
        body["systemInstruction"] = instruction
    if tools:
        body["tools"] = gemini_tools(tools)
    if tool_choice is not None:
        body["toolConfig"] = gemini_tool_config(tool_choice)
    # Google's SDK always sends a generation config, empty or not; so does this body.
    config: JsonDict = {}
    if temperature is not None:
        config["temperature"] = temperature
    if max_output_tokens is not None:
        config["maxOutputTokens"] = max_output_tokens
    body["generationConfig"] = config
    return {**body, **(extra_body or {})}


class GeminiProvider(ApiProvider):
    settings: GeminiTarget
    sdk = "gemini"

    def body(
        self,
        messages: Sequence[ChatMessage],
        tools: Sequence[ToolDefinition] = (),
        tool_choice: ToolChoice | None = None,
    ) -> JsonDict:
        s = self.settings
        return gemini_body(
            messages,
            temperature=s.temperature,
            max_output_tokens=s.max_output_tokens,
            extra_body=s.extra_body,
            tools=tools,
            tool_choice=tool_choice,
        )

    def endpoint(self) -> str:
        return self.settings.base_url or "https://generativelanguage.googleapis.com"

    def connect(self) -> Any:
        try:
            from google import genai
            from google.genai import types
        except ImportError:
            raise self.missing_sdk("google-genai") from None
        options = types.HttpOptions(
            base_url=self.settings.base_url, retry_options=types.HttpRetryOptions(attempts=1)
        )
        return genai.Client(api_key=self.api_key(), http_options=options)

    def aconnect(self) -> Any:
        """A client of its own for `asend`, which calls through its `aio` side: the client
        is held, not only `aio`, since a client let go closes its connections."""
        return self.connect()

    def send(self, client: Any, body: JsonDict, timeout: float) -> ProviderOutput:
        arguments = self._arguments(body, timeout)
        began = time.monotonic()
        response = client.models.generate_content(**arguments)
        return gemini_output(response, elapsed_ms(began))

    async def asend(self, client: Any, body: JsonDict, timeout: float) -> ProviderOutput:
        arguments = self._arguments(body, timeout)
        began = time.monotonic()
        response = await client.aio.models.generate_content(**arguments)
        return gemini_output(response, elapsed_ms(began))

    def _arguments(self, body: JsonDict, timeout: float) -> dict[str, Any]:
        """`generate_content`'s arguments for this body; none when it has no turns."""
        from google.genai import types

        if not body["contents"]:
            raise no_turns("Gemini")
        known = ("contents", "systemInstruction", "generationConfig", "tools", "toolConfig")
        extra = {k: v for k, v in body.items() if k not in known}
        generation = body.get("generationConfig", {})
        tool_config = body.get("toolConfig")
        config = types.GenerateContentConfig(
            system_instruction=body.get("systemInstruction"),
            temperature=generation.get("temperature"),
            max_output_tokens=generation.get("maxOutputTokens"),
            # The SDK's own types, read from the body's camelCase, write the wire's fields.
            tools=[types.Tool.model_validate(t) for t in body.get("tools", ())] or None,
            tool_config=types.ToolConfig.model_validate(tool_config) if tool_config else None,
            http_options=types.HttpOptions(
                timeout=int(timeout * 1000),
                extra_body=extra or None,
                retry_options=types.HttpRetryOptions(attempts=1),
            ),
        )
        return {"model": self.settings.model, "contents": body["contents"], "config": config}


def gemini_output(response: Any, latency_ms: int) -> ProviderOutput:
    candidate = (response.candidates or [None])[0]
    parts = candidate.content.parts if candidate and candidate.content else []
    answer = "".join(p.text for p in parts or () if p.text)
    calls = [
        {
            "id": p.function_call.id,
            "name": p.function_call.name,
            "arguments": p.function_call.args or {},
        }
        for p in parts or ()
        if p.function_call
    ]
    reason = candidate.finish_reason.value if candidate and candidate.finish_reason else None
    usage = response.usage_metadata
    return ProviderOutput(
        answer=answer,
        model=response.model_version,
        finish_reason=reason,
        tool_calls=calls,
        request_id=response.response_id,
        usage=Usage(
            input_tokens=usage.prompt_token_count, output_tokens=usage.candidates_token_count
        )
        if usage
        else None,
        model_failure=finish(answer, reason, calls),
        artifacts={"latency_ms": latency_ms},
    )

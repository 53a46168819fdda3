"""Turning a case's resolved `input_messages` into `question`, `chat_prompt` and `guidelines`.

The rules are `docs/prompt-building.md`, followed exactly: API providers get the
structured `chat_prompt` (through `bridge.prompt.request.api_messages`), agent providers
the chronological `question` transcript with `[Role]:` markers.
"""

from __future__ import annotations

import json
from collections.abc import Sequence

from evalrelay.bridge.evalfile.cases import LoadedCase
from evalrelay.bridge.evalfile.resolved import (
    Part,
    ResolvedFile,
    ResolvedMessage,
    Text,
    is_empty,
    is_single_user_turn,
)
from evalrelay.bridge.evalfile.tools import ToolChoice, ToolDefinition
from evalrelay.bridge.prompt.messages import ChatMessage, system
from evalrelay.bridge.prompt.request import PromptRequest, with_guidelines


def build_request(
    messages: Sequence[ResolvedMessage],
    system_prompt: str | None = None,
    tools: Sequence[ToolDefinition] = (),
    tool_choice: ToolChoice | None = None,
) -> PromptRequest:
    guidelines_text = guidelines(messages)
    return PromptRequest(
        question=question(messages),
        chat_prompt=chat_prompt(messages, guidelines_text, system_prompt),
        guidelines=guidelines_text,
        system_prompt=system_prompt,
        tools=list(tools) or None,
        tool_choice=tool_choice,
    )


def request_for(
    case: LoadedCase, target_system_prompt: str | None = None, default_system: bool = True
) -> PromptRequest:
    """A loaded case's request; its own system prompt (case, then file) beats the target's."""
    request = build_request(
        case.messages, case.system_prompt or target_system_prompt, case.tools, case.tool_choice
    )
    return request if default_system else request.model_copy(update={"default_system": False})


def render(message: ResolvedMessage) -> str:
    """One message's content (spec §2): segments in order, joined with newlines."""
    return "\n".join(_render_part(part) for part in message.parts)


def _render_part(part: Part) -> str:
    if isinstance(part, Text):
        return part.value
    if part.is_guideline:
        return f"<Attached: {part.display_path}>"
    return f"=== {part.display_path} ===\n{part.text}"


def guidelines(messages: Sequence[ResolvedMessage]) -> str:
    """The case's guideline files, in order of first appearance, each once (spec §3)."""
    seen: dict[str, ResolvedFile] = {}
    for message in messages:
        for part in message.parts:
            if isinstance(part, ResolvedFile) and part.is_guideline:
                seen.setdefault(part.project_path, part)
    files = list(seen.values())
    if len(files) == 1:
        return files[0].text
    return "\n\n".join(f"=== {f.display_path} ===\n{f.text}" for f in files)


def question(messages: Sequence[ResolvedMessage]) -> str:
    """The flat transcript (spec §4): chronological `[Role]:` markers, or the bare single turn."""
    if is_single_user_turn(messages):
        return render(messages[0])
    return "\n".join(
        f"[{m.role.capitalize()}]: {_transcript_text(m)}" for m in messages if not is_empty(m)
    )


def _transcript_text(message: ResolvedMessage) -> str:
    calls = [
        f"<Tool call: {c.name} {json.dumps(c.arguments, ensure_ascii=False)}>"
        for c in message.tool_calls
    ]
    return "\n".join(text for text in (render(message), *calls) if text)


def chat_prompt(
    messages: Sequence[ResolvedMessage], guidelines_text: str, system_prompt: str | None
) -> list[ChatMessage] | None:
    """The structured conversation (spec §5); None for a single user turn."""
    if is_single_user_turn(messages):
        return None
    leading = _leading_system_count(messages)
    base = "\n\n".join(render(m) for m in messages[:leading] if not is_empty(m)) or system_prompt
    system_text = with_guidelines(base or "", guidelines_text)
    prompt = [system(system_text)] if system_text else []
    for message in messages[leading:]:
        if not is_empty(message):
            prompt.append(_turn(message))
    return prompt


def _leading_system_count(messages: Sequence[ResolvedMessage]) -> int:
    return next((i for i, m in enumerate(messages) if m.role != "system"), len(messages))


def _turn(message: ResolvedMessage) -> ChatMessage:
    if message.role == "system":
        # A later system message keeps its place as an assistant turn (spec §5.2).
        return ChatMessage(role="assistant", content=f"[System]: {render(message)}")
    return ChatMessage(
        role=message.role,
        content=render(message),
        tool_calls=list(message.tool_calls) or None,
        tool_call_id=message.tool_call_id,
    )

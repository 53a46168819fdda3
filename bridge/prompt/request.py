"""The request a job carries to a provider, and the neutral messages an API provider sends.

Both sides read it: the submitting side builds it from a loaded case (`bridge.prompt.build`),
the worker turns it into messages (`api_messages`). It imports no eval-file loader.
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict

from evalrelay.bridge.evalfile.tools import ToolChoice, ToolDefinition
from evalrelay.bridge.prompt.messages import DEFAULT_SYSTEM_PROMPT, ChatMessage, system, user

GUIDELINES_HEADING = "[[ ## Guidelines ## ]]"


class PromptRequest(BaseModel):
    """What a case asks of a provider; travels in the job and is echoed in the result."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    question: str
    chat_prompt: list[ChatMessage] | None = None
    guidelines: str = ""
    system_prompt: str | None = None
    default_system: bool = True
    """Whether API targets get evalrelay's default system prompt when neither the case nor
    the target gives one; false for promptfoo configs, whose prompts are sent as written."""
    tools: list[ToolDefinition] | None = None
    """Functions an API target may call; agents have their own tools and never see these."""
    tool_choice: ToolChoice | None = None


def with_guidelines(base: str, guidelines_text: str) -> str:
    """`base`, then the guidelines under their heading (spec §5, §6)."""
    if not guidelines_text:
        return base
    block = f"{GUIDELINES_HEADING}\n\n{guidelines_text}"
    return f"{base}\n\n{block}" if base else block


def api_messages(request: PromptRequest) -> list[ChatMessage]:
    """The neutral messages an API provider sends (spec §6)."""
    default = request.system_prompt or (DEFAULT_SYSTEM_PROMPT if request.default_system else "")
    if request.chat_prompt is not None:
        if request.chat_prompt and request.chat_prompt[0].role == "system":
            return list(request.chat_prompt)
        return [system(default), *request.chat_prompt] if default else list(request.chat_prompt)
    instructions = with_guidelines(default, request.guidelines)
    asked = user(request.question)
    return [system(instructions), asked] if instructions else [asked]

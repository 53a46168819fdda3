"""Anthropic Messages converter, as a pure function."""

from __future__ import annotations

from evalrelay.bridge.prompt.messages import ChatMessage
from evalrelay.worker.providers.anthropic import anthropic_body
from tests.worker.providers.conversation import TOOL_CONVERSATION


def test_tool_use_and_results_with_strict_alternation() -> None:
    # Anthropic: system is top-level; roles must alternate, so the two tool results, then the
    # two user turns and the untied tool text, merge into user turns; results are blocks.
    body = anthropic_body("claude", TOOL_CONVERSATION, max_output_tokens=64)
    assert body == {
        "model": "claude",
        "max_tokens": 64,
        "system": "Use tools.",
        "messages": [
            {"role": "user", "content": "Weather in Paris and Rome?"},
            {
                "role": "assistant",
                "content": [
                    {"type": "text", "text": "Checking."},
                    {"type": "tool_use", "id": "c1", "name": "weather", "input": {"city": "Paris"}},
                    {"type": "tool_use", "id": "c2", "name": "weather", "input": {"city": "Rome"}},
                ],
            },
            {
                "role": "user",
                "content": [
                    {"type": "tool_result", "tool_use_id": "c1", "content": '{"temp": 21}'},
                    {"type": "tool_result", "tool_use_id": "c2", "content": "sunny"},
                    {"type": "text", "text": "Thanks\n\nWhich is warmer?\n\n[Tool]: log line"},
                ],
            },
        ],
    }


def test_consecutive_plain_turns_merge_with_a_blank_line() -> None:
    messages = [
        ChatMessage(role="system", content="S"),
        ChatMessage(role="user", content="a"),
        ChatMessage(role="user", content="b"),
        ChatMessage(role="assistant", content="c"),
        ChatMessage(role="assistant", content="[System]: d"),
    ]
    body = anthropic_body("m", messages, max_output_tokens=1, temperature=0.5)
    assert body["messages"] == [
        {"role": "user", "content": "a\n\nb"},
        {"role": "assistant", "content": "c\n\n[System]: d"},
    ]
    assert body["temperature"] == 0.5

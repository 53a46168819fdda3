"""OpenAI Chat Completions and Responses converters, as pure functions."""

from __future__ import annotations

from evalrelay.bridge.prompt.messages import ChatMessage
from evalrelay.worker.providers._openai import chat_completions_body, responses_body
from tests.worker.providers.conversation import TOOL_CONVERSATION


def test_chat_completions_sends_tool_calls_natively() -> None:
    # OpenAI: arguments are a JSON *string*; each output is a `tool` message naming its call.
    body = chat_completions_body("gpt-5", TOOL_CONVERSATION, temperature=0.0, max_output_tokens=50)
    assert body == {
        "model": "gpt-5",
        "messages": [
            {"role": "system", "content": "Use tools."},
            {"role": "user", "content": "Weather in Paris and Rome?"},
            {
                "role": "assistant",
                "content": "Checking.",
                "tool_calls": [
                    {
                        "id": "c1",
                        "type": "function",
                        "function": {"name": "weather", "arguments": '{"city": "Paris"}'},
                    },
                    {
                        "id": "c2",
                        "type": "function",
                        "function": {"name": "weather", "arguments": '{"city": "Rome"}'},
                    },
                ],
            },
            {"role": "tool", "tool_call_id": "c1", "content": '{"temp": 21}'},
            {"role": "tool", "tool_call_id": "c2", "content": "sunny"},
            {"role": "user", "content": "Thanks"},
            {"role": "user", "content": "Which is warmer?"},
            {"role": "user", "content": "[Tool]: log line"},
        ],
        "temperature": 0.0,
        "max_completion_tokens": 50,
    }


def test_chat_completions_content_is_a_plain_string_and_extra_body_merges() -> None:
    body = chat_completions_body(
        "m",
        [ChatMessage(role="user", content="hi")],
        max_output_tokens=9,
        max_tokens_field="max_tokens",
        extra_body={"top_k": 5},
    )
    assert body == {
        "model": "m",
        "messages": [{"role": "user", "content": "hi"}],
        "max_tokens": 9,
        "top_k": 5,
    }


def test_responses_puts_system_in_instructions_and_calls_in_items() -> None:
    body = responses_body("gpt-5", TOOL_CONVERSATION, max_output_tokens=100)
    assert body == {
        "model": "gpt-5",
        "instructions": "Use tools.",
        "input": [
            {"role": "user", "content": "Weather in Paris and Rome?"},
            {"role": "assistant", "content": "Checking."},
            {
                "type": "function_call",
                "call_id": "c1",
                "name": "weather",
                "arguments": '{"city": "Paris"}',
            },
            {
                "type": "function_call",
                "call_id": "c2",
                "name": "weather",
                "arguments": '{"city": "Rome"}',
            },
            {"type": "function_call_output", "call_id": "c1", "output": '{"temp": 21}'},
            {"type": "function_call_output", "call_id": "c2", "output": "sunny"},
            {"role": "user", "content": "Thanks"},
            {"role": "user", "content": "Which is warmer?"},
            {"role": "user", "content": "[Tool]: log line"},
        ],
        "max_output_tokens": 100,
    }

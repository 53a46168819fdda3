"""Gemini generateContent converter, as a pure function."""

from __future__ import annotations

from evalrelay.bridge.prompt.messages import ChatMessage
from evalrelay.worker.providers.gemini import gemini_body
from tests.worker.providers.conversation import TOOL_CONVERSATION


def test_function_calls_and_responses_by_name() -> None:
    # Gemini: role `model` for the assistant; a functionResponse names the function and
    # carries an object; the responses to one turn's calls travel in one user content.
    body = gemini_body(TOOL_CONVERSATION, temperature=0.2, max_output_tokens=32)
    assert body == {
        "contents": [
            {"role": "user", "parts": [{"text": "Weather in Paris and Rome?"}]},
            {
                "role": "model",
                "parts": [
                    {"text": "Checking."},
                    {"functionCall": {"id": "c1", "name": "weather", "args": {"city": "Paris"}}},
                    {"functionCall": {"id": "c2", "name": "weather", "args": {"city": "Rome"}}},
                ],
            },
            {
                "role": "user",
                "parts": [
                    {"functionResponse": {"id": "c1", "name": "weather", "response": {"temp": 21}}},
                    {
                        "functionResponse": {
                            "id": "c2",
                            "name": "weather",
                            "response": {"result": "sunny"},
                        }
                    },
                ],
            },
            {"role": "user", "parts": [{"text": "Thanks"}]},
            {"role": "user", "parts": [{"text": "Which is warmer?"}]},
            {"role": "user", "parts": [{"text": "[Tool]: log line"}]},
        ],
        "systemInstruction": {"parts": [{"text": "Use tools."}]},
        "generationConfig": {"temperature": 0.2, "maxOutputTokens": 32},
    }


def test_empty_texts_are_skipped() -> None:
    messages = [ChatMessage(role="user", content="hi"), ChatMessage(role="assistant", content="")]
    assert gemini_body(messages) == {
        "contents": [{"role": "user", "parts": [{"text": "hi"}]}],
        "generationConfig": {},
    }

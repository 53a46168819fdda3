"""API providers through the vendors' real SDKs against loopback servers: exact wire bodies,
parsed answers, and every failure ending in the right status after the right attempts."""

from __future__ import annotations

import contextlib
import json
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import redis

from evalrelay.bridge.contract.job import Job
from evalrelay.bridge.evalfile.schema import ToolCall
from evalrelay.bridge.evalfile.tools import NamedToolChoice, ToolChoice, ToolDefinition
from evalrelay.bridge.prompt.messages import ChatMessage
from evalrelay.bridge.prompt.request import PromptRequest, api_messages
from evalrelay.bridge.queue.steering import pause
from evalrelay.bridge.results.result import Status
from evalrelay.worker.execute import execute
from evalrelay.worker.providers.base import Steered
from evalrelay.worker.providers.call import call_provider
from tests.bridge.cli.test_run import run
from tests.conftest import WriteFiles, direct_job, embedded_env, read_jsonl, wait_for
from tests.worker.providers.vendor_server import (
    Reply,
    VendorServer,
    anthropic_message,
    anthropic_tool_use,
    gemini_function_call,
    gemini_response,
    openai_chat,
    openai_chat_tool_call,
    openai_responses,
    openai_responses_tool_call,
    serving,
)

KEY = "sk-test-secret-0123456789"


@pytest.fixture(autouse=True)
def keys(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("OPENAI_API_KEY", "ANTHROPIC_API_KEY", "GEMINI_API_KEY", "AZURE_OPENAI_API_KEY"):
        monkeypatch.setenv(name, KEY)


def sys_(text: str) -> ChatMessage:
    return ChatMessage(role="system", content=text)


def user(text: str) -> ChatMessage:
    return ChatMessage(role="user", content=text)


def assistant(text: str) -> ChatMessage:
    return ChatMessage(role="assistant", content=text)


DEFAULT = "You are a careful assistant."
G = "[[ ## Guidelines ## ]]\n\n"
SPEC_REQUESTS = {
    "E1": PromptRequest(
        question="q", chat_prompt=[sys_("You are a helpful assistant."), user("Hello, world!")]
    ),
    "E2": PromptRequest(
        question="q",
        chat_prompt=[
            user("Debug this code"),
            assistant("I can help with that"),
            user("Thanks, here's the code"),
        ],
    ),
    "E3": PromptRequest(
        question="Review this code\n<Attached: ./guidelines.instructions.md>",
        guidelines="Always be concise",
    ),
    "E4": PromptRequest(question="Review this:\n=== ./code.js ===\nconsole.log('test')"),
    "E5": PromptRequest(
        question="<Attached: python.instructions.md>\n<Attached: security.instructions.md>",
        guidelines="=== python.instructions.md ===\nUse type hints\n\n"
        "=== security.instructions.md ===\nNever log secrets",
    ),
    "E6": PromptRequest(
        question="[System]: System context",
        chat_prompt=[sys_(f"System context\n\n{G}Always be concise")],
    ),
    "E7": PromptRequest(
        question="q",
        system_prompt="Default prompt",
        chat_prompt=[
            sys_(f"Custom system context\n\n{G}Be concise"),
            user("Hello\n<Attached: ./guidelines.instructions.md>"),
        ],
    ),
    "E8": PromptRequest(
        question="q",
        chat_prompt=[
            sys_("S1"),
            user("U1"),
            assistant("A1"),
            assistant("[System]: Now answer in French"),
            user("U2"),
        ],
    ),
    "E9": PromptRequest(question="q", chat_prompt=[user("Hi"), assistant("Hello! Anything else?")]),
    "E10": PromptRequest(question="What is the capital of France?"),
    "E11": PromptRequest(
        question="Hello",
        guidelines="Old guideline 1\n\nOld guideline 2",
        chat_prompt=[sys_("System with guidelines already merged"), user("Hello")],
    ),
}
"""The spec's requests; each vendor's body must carry exactly their `api_messages`."""

EXPECTED = {
    "E1": [("system", "You are a helpful assistant."), ("user", "Hello, world!")],
    "E2": [
        ("system", DEFAULT),
        ("user", "Debug this code"),
        ("assistant", "I can help with that"),
        ("user", "Thanks, here's the code"),
    ],
    "E3": [
        ("system", f"{DEFAULT}\n\n{G}Always be concise"),
        ("user", "Review this code\n<Attached: ./guidelines.instructions.md>"),
    ],
    "E4": [("system", DEFAULT), ("user", "Review this:\n=== ./code.js ===\nconsole.log('test')")],
    "E5": [
        (
            "system",
            f"{DEFAULT}\n\n{G}=== python.instructions.md ===\nUse type hints\n\n"
            "=== security.instructions.md ===\nNever log secrets",
        ),
        ("user", "<Attached: python.instructions.md>\n<Attached: security.instructions.md>"),
    ],
    "E6": [("system", f"System context\n\n{G}Always be concise")],
    "E7": [
        ("system", f"Custom system context\n\n{G}Be concise"),
        ("user", "Hello\n<Attached: ./guidelines.instructions.md>"),
    ],
    "E8": [
        ("system", "S1"),
        ("user", "U1"),
        ("assistant", "A1"),
        ("assistant", "[System]: Now answer in French"),
        ("user", "U2"),
    ],
    "E9": [("system", DEFAULT), ("user", "Hi"), ("assistant", "Hello! Anything else?")],
    "E10": [("system", DEFAULT), ("user", "What is the capital of France?")],
    "E11": [("system", "System with guidelines already merged"), ("user", "Hello")],
}


def job(
    settings: dict[str, Any], request: PromptRequest, timeout: float = 20, cache: int | None = None
) -> Job:
    return direct_job(settings, request=request, timeout_seconds=timeout, cache_ttl_seconds=cache)


def openai_target(url: str, **extra: Any) -> dict[str, Any]:
    return {
        "name": "gpt",
        "provider": "openai",
        "model": "gpt-test",
        "base_url": f"{url}/v1",
        "retry_initial_delay_ms": 10,
        **extra,
    }


def merged(pairs: list[tuple[str, str]]) -> list[dict[str, str]]:
    """Anthropic's strict alternation: consecutive same-role turns joined by a blank line."""
    out: list[dict[str, str]] = []
    for role, text in pairs:
        if out and out[-1]["role"] == role:
            out[-1]["content"] += f"\n\n{text}"
        else:
            out.append({"role": role, "content": text})
    return out


@pytest.mark.parametrize("vector", sorted(SPEC_REQUESTS, key=lambda k: int(k[1:])))
def test_openai_chat_sends_the_spec_messages(vector: str) -> None:
    with serving(Reply(openai_chat())) as server:
        result = execute(job(openai_target(server.url), SPEC_REQUESTS[vector]), "w")
    assert result.status is Status.OK, result.error
    (seen,) = server.seen
    assert seen.path == "/v1/chat/completions"
    assert seen.body == {
        "model": "gpt-test",
        "messages": [{"role": role, "content": text} for role, text in EXPECTED[vector]],
    }
    assert seen.headers["authorization"] == f"Bearer {KEY}"


@pytest.mark.parametrize("vector", sorted(SPEC_REQUESTS, key=lambda k: int(k[1:])))
def test_openai_responses_sends_the_spec_messages(vector: str) -> None:
    with serving(Reply(openai_responses())) as server:
        result = execute(
            job(openai_target(server.url, api="responses"), SPEC_REQUESTS[vector]), "w"
        )
    assert result.status is Status.OK, result.error
    (seen,) = server.seen
    system, *turns = EXPECTED[vector]
    assert seen.path == "/v1/responses"
    assert seen.body == {
        "model": "gpt-test",
        "instructions": system[1],
        "input": [{"role": r, "content": t} for r, t in turns],
    }


@pytest.mark.parametrize("vector", sorted(SPEC_REQUESTS, key=lambda k: int(k[1:])))
def test_anthropic_sends_the_spec_messages(vector: str) -> None:
    with serving(Reply(anthropic_message())) as server:
        settings = {
            "name": "c",
            "provider": "anthropic",
            "model": "claude-test",
            "base_url": server.url,
            "max_output_tokens": 50,
        }
        result = execute(job(settings, SPEC_REQUESTS[vector]), "w")
    system, *turns = EXPECTED[vector]
    if not turns:  # E6: Anthropic refuses a request with no turns, so none is sent
        assert (result.status, server.seen) == (Status.INVALID_INPUT, [])
        return
    assert result.status is Status.OK, result.error
    (seen,) = server.seen
    assert seen.path == "/v1/messages"
    assert seen.body == {
        "model": "claude-test",
        "max_tokens": 50,
        "system": system[1],
        "messages": merged(turns),
    }
    # SDK releases differ in the header they send the key in; either way it is this worker's.
    assert KEY in (seen.headers.get("x-api-key"), seen.headers.get("authorization", "")[7:])


@pytest.mark.parametrize("vector", sorted(SPEC_REQUESTS, key=lambda k: int(k[1:])))
def test_gemini_sends_the_spec_messages(vector: str) -> None:
    with serving(Reply(gemini_response())) as server:
        settings = {
            "name": "g",
            "provider": "gemini",
            "model": "gemini-test",
            "base_url": server.url,
        }
        result = execute(job(settings, SPEC_REQUESTS[vector]), "w")
    system, *turns = EXPECTED[vector]
    if not turns:  # E6: Gemini refuses a request with no contents, so none is sent
        assert (result.status, server.seen) == (Status.INVALID_INPUT, [])
        return
    assert result.status is Status.OK, result.error
    (seen,) = server.seen
    assert seen.path.endswith("/models/gemini-test:generateContent")
    assert seen.body == {
        "contents": [
            {"role": "model" if r == "assistant" else "user", "parts": [{"text": t}]}
            for r, t in turns
        ],
        "systemInstruction": {"parts": [{"text": system[1]}]},
        "generationConfig": {},
    }


TOOLS = PromptRequest(
    question="q",
    chat_prompt=[
        user("Weather in Paris?"),
        ChatMessage(
            role="assistant",
            content="",
            tool_calls=[ToolCall(id="c1", name="weather", arguments={"city": "Paris"})],
        ),
        ChatMessage(role="tool", content='{"temp": 21}', tool_call_id="c1"),
        user("Thanks"),
    ],
)


def test_tool_conversation_goes_out_natively_to_each_vendor() -> None:
    with serving(Reply(openai_chat())) as server:
        execute(job(openai_target(server.url), TOOLS), "w")
    assert server.seen[0].body["messages"][2:4] == [
        {
            "role": "assistant",
            "content": "",
            "tool_calls": [
                {
                    "id": "c1",
                    "type": "function",
                    "function": {"name": "weather", "arguments": '{"city": "Paris"}'},
                }
            ],
        },
        {"role": "tool", "tool_call_id": "c1", "content": '{"temp": 21}'},
    ]
    with serving(Reply(anthropic_message())) as server:
        execute(
            job(
                {"name": "c", "provider": "anthropic", "model": "m", "base_url": server.url}, TOOLS
            ),
            "w",
        )
    assert server.seen[0].body["messages"][1:] == [
        {
            "role": "assistant",
            "content": [
                {"type": "tool_use", "id": "c1", "name": "weather", "input": {"city": "Paris"}}
            ],
        },
        {
            "role": "user",
            "content": [
                {"type": "tool_result", "tool_use_id": "c1", "content": '{"temp": 21}'},
                {"type": "text", "text": "Thanks"},
            ],
        },
    ]
    with serving(Reply(gemini_response())) as server:
        execute(
            job({"name": "g", "provider": "gemini", "model": "m", "base_url": server.url}, TOOLS),
            "w",
        )
    assert server.seen[0].body["contents"][1:3] == [
        {
            "role": "model",
            "parts": [{"functionCall": {"id": "c1", "name": "weather", "args": {"city": "Paris"}}}],
        },
        {
            "role": "user",
            "parts": [
                {"functionResponse": {"id": "c1", "name": "weather", "response": {"temp": 21}}}
            ],
        },
    ]


def test_answer_usage_model_and_request_id_reach_the_result() -> None:
    reply = Reply(
        openai_chat(
            "Paris",
            tool_calls=[
                {"id": "t1", "type": "function", "function": {"name": "f", "arguments": '{"a": 1}'}}
            ],
        ),
        headers={"x-request-id": "req-42"},
    )
    with serving(reply) as server:
        result = execute(job(openai_target(server.url), SPEC_REQUESTS["E10"]), "w")
    assert (result.status, result.answer) == (Status.OK, "Paris")
    assert result.usage is not None
    assert (result.usage.input_tokens, result.usage.output_tokens) == (11, 3)
    assert result.artifacts["request_id"] == "req-42"
    assert result.artifacts["model"] == "gpt-test"
    assert result.artifacts["finish_reason"] == "stop"
    assert result.artifacts["tool_calls"] == [{"id": "t1", "name": "f", "arguments": {"a": 1}}]
    assert result.raw_request == SPEC_REQUESTS["E10"]


def statuses(result: Any) -> list[str]:
    return [call["status"] for call in result.artifacts["calls"]]


def test_429_with_retry_after_is_retried_after_the_wait() -> None:
    limited = Reply(
        {"error": {"message": "slow down", "type": "rate_limit"}},
        status=429,
        headers={"retry-after": "0.3"},
    )
    with serving(limited, Reply(openai_chat())) as server:
        result = execute(job(openai_target(server.url), SPEC_REQUESTS["E10"]), "w")
    assert result.status is Status.OK
    assert statuses(result) == ["rate_limited", "ok"]
    assert server.seen[1].at - server.seen[0].at >= 0.3


def test_429_until_the_retries_run_out_is_rate_limited() -> None:
    limited = Reply({"error": {"message": "slow down"}}, status=429, headers={"retry-after": "0"})
    with serving(limited) as server:
        result = execute(job(openai_target(server.url, max_retries=1), SPEC_REQUESTS["E10"]), "w")
    assert result.status is Status.RATE_LIMITED
    assert len(server.seen) == 2


def test_429_for_exhausted_quota_is_not_retried() -> None:
    quota = Reply(
        {
            "error": {
                "message": "You exceeded your current quota",
                "type": "insufficient_quota",
                "code": "insufficient_quota",
            }
        },
        status=429,
    )
    with serving(quota) as server:
        result = execute(job(openai_target(server.url), SPEC_REQUESTS["E10"]), "w")
    assert result.status is Status.QUOTA_EXHAUSTED
    assert len(server.seen) == 1


def test_500_then_success() -> None:
    with serving(Reply({"error": {"message": "boom"}}, status=500), Reply(openai_chat())) as server:
        result = execute(job(openai_target(server.url), SPEC_REQUESTS["E10"]), "w")
    assert result.status is Status.OK
    assert statuses(result) == ["infra_error", "ok"]
    assert len(server.seen) == 2


def test_hanging_server_ends_in_timeout() -> None:
    with serving(Reply(openai_chat(), delay=3)) as server:
        started = time.monotonic()
        result = execute(
            job(
                openai_target(server.url, timeout_seconds=0.5, max_retries=1), SPEC_REQUESTS["E10"]
            ),
            "w",
        )
    assert result.status is Status.TIMEOUT
    assert len(server.seen) == 2
    assert time.monotonic() - started < 3


def test_401_is_an_infra_error_not_retried_and_the_key_never_shows() -> None:
    echo_key = Reply({"error": {"message": f"Incorrect API key provided: {KEY}"}}, status=401)
    with serving(echo_key) as server:
        result = execute(job(openai_target(server.url), SPEC_REQUESTS["E10"]), "w")
    assert result.status is Status.INFRA_ERROR
    assert len(server.seen) == 1
    assert KEY not in result.model_dump_json()
    assert "***" in (result.error.message if result.error else "")


@pytest.mark.parametrize("padding", range(440, 520, 3))
def test_a_key_split_by_the_message_cut_never_shows_even_in_part(padding: int) -> None:
    """The vendor's text is cut to 500 characters; wherever the cut falls, no piece of the
    key is left for masking to miss."""
    body = {"error": {"message": "x" * padding + f" Bearer {KEY} was refused"}}
    with serving(Reply(body, status=401)) as server:
        result = execute(job(openai_target(server.url), SPEC_REQUESTS["E10"]), "w")
    shown = result.model_dump_json()
    pieces = {KEY[i : i + 6] for i in range(len(KEY) - 5)}
    assert not [piece for piece in pieces if piece in shown], shown[-200:]


def test_400_is_invalid_input() -> None:
    with serving(Reply({"error": {"message": "bad request"}}, status=400)) as server:
        result = execute(job(openai_target(server.url), SPEC_REQUESTS["E10"]), "w")
    assert result.status is Status.INVALID_INPUT
    assert len(server.seen) == 1


def test_refusal_is_a_model_failure_with_its_answer() -> None:
    refusal = openai_chat("")
    refusal["choices"][0]["finish_reason"] = "content_filter"
    with serving(Reply(refusal)) as server:
        result = execute(job(openai_target(server.url), SPEC_REQUESTS["E10"]), "w")
    assert result.status is Status.MODEL_FAILURE
    assert result.error is not None and "content_filter" in result.error.message


def test_azure_uses_its_deployment_and_api_version() -> None:
    with serving(Reply(openai_chat())) as server:
        settings = {
            "name": "az",
            "provider": "azure",
            "endpoint": server.url,
            "deployment": "dep-1",
            "api_version": "2024-10-01-preview",
        }
        result = execute(job(settings, SPEC_REQUESTS["E1"]), "w")
    assert result.status is Status.OK, result.error
    (seen,) = server.seen
    assert seen.path == "/openai/deployments/dep-1/chat/completions?api-version=2024-10-01-preview"
    assert seen.headers["api-key"] == KEY
    assert seen.body["messages"] == [{"role": r, "content": t} for r, t in EXPECTED["E1"]]


def test_openai_compatible_needs_no_key_and_sends_plain_strings(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delenv("OPENAI_API_KEY")
    with serving(Reply(openai_chat())) as server:
        settings = {
            "name": "local",
            "provider": "openai-compatible",
            "model": "qwen",
            "base_url": f"{server.url}/v1",
            "max_output_tokens": 9,
            "extra_body": {"top_k": 4},
        }
        result = execute(job(settings, SPEC_REQUESTS["E2"]), "w")
    assert result.status is Status.OK, result.error
    body = server.seen[0].body
    assert all(isinstance(m["content"], str) for m in body["messages"])
    assert (body["max_tokens"], body["top_k"]) == (9, 4)


def test_missing_key_names_the_variable(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("ANTHROPIC_API_KEY")
    result = execute(
        job(
            {"name": "c", "provider": "anthropic", "model": "m", "base_url": "http://127.0.0.1:1"},
            SPEC_REQUESTS["E1"],
        ),
        "w",
    )
    assert result.status is Status.INFRA_ERROR
    assert result.error is not None
    assert (
        "environment variable ANTHROPIC_API_KEY is not set on worker host" in result.error.message
    )


def test_missing_sdk_names_the_extra(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(__import__("sys").modules, "anthropic", None)
    result = execute(
        job({"name": "c", "provider": "anthropic", "model": "m"}, SPEC_REQUESTS["E1"]), "w"
    )
    assert result.status is Status.INFRA_ERROR
    assert result.error is not None
    assert "pip install 'evalrelay[anthropic]'" in result.error.message


def test_cache_answers_the_same_request_once(client: redis.Redis) -> None:
    with serving(Reply(openai_chat())) as server:
        first = execute(job(openai_target(server.url), SPEC_REQUESTS["E1"], cache=60), "w", client)
        second = execute(job(openai_target(server.url), SPEC_REQUESTS["E1"], cache=60), "w", client)
        other = execute(
            job(openai_target(server.url, temperature=0.5), SPEC_REQUESTS["E1"], cache=60),
            "w",
            client,
        )
    assert len(server.seen) == 2  # the third differs in its generation settings
    assert (first.answer, second.answer, other.answer) == ("Paris", "Paris", "Paris")
    assert second.artifacts.get("cached") is True
    assert "cached" not in first.artifacts


def test_errors_are_never_cached(client: redis.Redis) -> None:
    with serving(Reply({"error": {"message": "bad"}}, status=400), Reply(openai_chat())) as server:
        first = execute(job(openai_target(server.url), SPEC_REQUESTS["E1"], cache=60), "w", client)
        second = execute(job(openai_target(server.url), SPEC_REQUESTS["E1"], cache=60), "w", client)
    assert (first.status, second.status) == (Status.INVALID_INPUT, Status.OK)
    assert len(server.seen) == 2


def test_api_messages_helper_matches_the_expected_table() -> None:
    for vector, request in SPEC_REQUESTS.items():
        assert [(m.role, m.content) for m in api_messages(request)] == EXPECTED[vector], vector
    assert json.dumps(EXPECTED)  # the table itself is plain data


VENDORS = {
    "anthropic": (
        lambda url: {
            "name": "c",
            "provider": "anthropic",
            "model": "m",
            "base_url": url,
            "retry_initial_delay_ms": 10,
        },
        anthropic_message,
    ),
    "gemini": (
        lambda url: {
            "name": "g",
            "provider": "gemini",
            "model": "m",
            "base_url": url,
            "retry_initial_delay_ms": 10,
        },
        gemini_response,
    ),
    "responses": (lambda url: openai_target(url, api="responses"), openai_responses),
}


@pytest.mark.parametrize("vendor", sorted(VENDORS))
def test_each_sdks_errors_are_classified_alike(vendor: str) -> None:
    settings, success = VENDORS[vendor]
    limited = Reply({"error": {"message": "slow down"}}, status=429, headers={"retry-after": "0.2"})
    with serving(limited, Reply(success())) as server:
        result = execute(job(settings(server.url), SPEC_REQUESTS["E1"]), "w")
    assert (result.status, statuses(result)) == (Status.OK, ["rate_limited", "ok"])
    assert server.seen[1].at - server.seen[0].at >= 0.2
    with serving(Reply({"error": {"message": f"bad key {KEY}"}}, status=401)) as server:
        result = execute(job(settings(server.url), SPEC_REQUESTS["E1"]), "w")
    assert (result.status, len(server.seen)) == (Status.INFRA_ERROR, 1)
    assert KEY not in result.model_dump_json()
    with serving(Reply({"error": {"message": "no such model"}}, status=404)) as server:
        result = execute(job(settings(server.url), SPEC_REQUESTS["E1"]), "w")
    assert result.status is Status.INVALID_INPUT


WEATHER = ToolDefinition(
    name="weather",
    description="Current weather in a city",
    parameters={
        "type": "object",
        "properties": {"city": {"type": "string"}, "unit": {"enum": ["C", "F"]}},
        "required": ["city"],
        "additionalProperties": False,
    },
)
CLOCK = ToolDefinition(name="clock")
"""No description and no arguments: what each vendor is sent for the defaults."""
CHOICES: list[ToolChoice] = ["auto", "none", "required", NamedToolChoice(name="weather")]


def sent_by_us(target: Callable[[str], dict[str, Any]], reply: Reply, choice: ToolChoice) -> Any:
    """The body a case offering WEATHER and CLOCK with this choice sends, through `execute`."""
    request = PromptRequest(question="Weather?", tools=[WEATHER, CLOCK], tool_choice=choice)
    with serving(reply) as server:
        result = execute(job(target(server.url), request), "w")
    assert result.status is Status.OK, result.error
    return server.seen[0].body


def sent_by_the_sdk(reply: Reply, call: Callable[[str], object]) -> Any:
    """The body the vendor's SDK writes when given the same tools as its own types."""
    with serving(reply) as server:
        call(server.url)
    return server.seen[0].body


def only(body: dict[str, Any], *keys: str) -> dict[str, Any]:
    return {k: body[k] for k in keys if k in body}


@pytest.mark.parametrize("choice", CHOICES, ids=str)
def test_openai_chat_tools_are_what_the_sdk_sends_for_its_own_types(choice: ToolChoice) -> None:
    from openai import OpenAI
    from openai.types.chat import ChatCompletionToolChoiceOptionParam, ChatCompletionToolParam

    tools: list[ChatCompletionToolParam] = [
        {
            "type": "function",
            "function": {
                "name": "weather",
                "description": "Current weather in a city",
                "parameters": WEATHER.parameters,
            },
        },
        {"type": "function", "function": {"name": "clock", "parameters": CLOCK.parameters}},
    ]
    named: ChatCompletionToolChoiceOptionParam = {
        "type": "function",
        "function": {"name": "weather"},
    }
    sdk_choice = named if isinstance(choice, NamedToolChoice) else choice
    ours = sent_by_us(openai_target, Reply(openai_chat()), choice)
    theirs = sent_by_the_sdk(
        Reply(openai_chat()),
        lambda url: OpenAI(api_key=KEY, base_url=f"{url}/v1").chat.completions.create(
            model="gpt-test", messages=[], tools=tools, tool_choice=sdk_choice
        ),
    )
    assert only(ours, "tools", "tool_choice") == only(theirs, "tools", "tool_choice")
    assert [t["function"]["name"] for t in ours["tools"]] == ["weather", "clock"]


@pytest.mark.parametrize("choice", CHOICES, ids=str)
def test_openai_responses_tools_are_what_the_sdk_sends_for_its_own_types(
    choice: ToolChoice,
) -> None:
    from openai import OpenAI
    from openai.types.responses import FunctionToolParam, ToolChoiceFunctionParam

    # Strict mode off, said explicitly: the Responses API would otherwise turn it on.
    tools: list[FunctionToolParam] = [
        {
            "type": "function",
            "name": "weather",
            "description": "Current weather in a city",
            "parameters": WEATHER.parameters,
            "strict": False,
        },
        {
            "type": "function",
            "name": "clock",
            "description": None,
            "parameters": CLOCK.parameters,
            "strict": False,
        },
    ]
    named: ToolChoiceFunctionParam = {"type": "function", "name": "weather"}
    sdk_choice = named if isinstance(choice, NamedToolChoice) else choice
    ours = sent_by_us(
        lambda url: openai_target(url, api="responses"), Reply(openai_responses()), choice
    )
    theirs = sent_by_the_sdk(
        Reply(openai_responses()),
        lambda url: OpenAI(api_key=KEY, base_url=f"{url}/v1").responses.create(
            model="gpt-test", input=[], tools=tools, tool_choice=sdk_choice
        ),
    )
    assert only(ours, "tools", "tool_choice") == only(theirs, "tools", "tool_choice")
    assert len(ours["tools"]) == 2


@pytest.mark.parametrize("choice", CHOICES, ids=str)
def test_anthropic_tools_are_what_the_sdk_sends_for_its_own_types(choice: ToolChoice) -> None:
    from anthropic import Anthropic
    from anthropic.types import ToolChoiceParam, ToolParam

    tools: list[ToolParam] = [
        {
            "name": "weather",
            "description": "Current weather in a city",
            "input_schema": WEATHER.parameters,
        },
        {"name": "clock", "input_schema": CLOCK.parameters},
    ]
    # Anthropic's `any` is OpenAI's `required`; a named function is `{type: tool, name}`.
    sdk_choice: ToolChoiceParam = {
        "auto": {"type": "auto"},
        "none": {"type": "none"},
        "required": {"type": "any"},
    }.get(str(choice), {"type": "tool", "name": "weather"})  # type: ignore[assignment]
    ours = sent_by_us(
        lambda url: {"name": "c", "provider": "anthropic", "model": "m", "base_url": url},
        Reply(anthropic_message()),
        choice,
    )
    theirs = sent_by_the_sdk(
        Reply(anthropic_message()),
        lambda url: Anthropic(api_key=KEY, base_url=url).messages.create(
            model="m", max_tokens=1, messages=[], tools=tools, tool_choice=sdk_choice
        ),
    )
    assert only(ours, "tools", "tool_choice") == only(theirs, "tools", "tool_choice")
    assert len(ours["tools"]) == 2


@pytest.mark.parametrize("choice", CHOICES, ids=str)
def test_gemini_tools_are_what_the_sdk_sends_for_its_own_types(choice: ToolChoice) -> None:
    from google import genai
    from google.genai import types

    # Gemini's `ANY` is OpenAI's `required`; a named function is `ANY` limited to it.
    mode, allowed = {
        "auto": ("AUTO", None),
        "none": ("NONE", None),
        "required": ("ANY", None),
    }.get(str(choice), ("ANY", ["weather"]))
    config = types.GenerateContentConfig(
        tools=[
            types.Tool(
                function_declarations=[
                    types.FunctionDeclaration(
                        name="weather",
                        description="Current weather in a city",
                        parameters_json_schema=WEATHER.parameters,
                    ),
                    types.FunctionDeclaration(
                        name="clock", parameters_json_schema=CLOCK.parameters
                    ),
                ]
            )
        ],
        tool_config=types.ToolConfig(
            function_calling_config=types.FunctionCallingConfig(
                mode=types.FunctionCallingConfigMode(mode), allowed_function_names=allowed
            )
        ),
    )
    ours = sent_by_us(
        lambda url: {"name": "g", "provider": "gemini", "model": "m", "base_url": url},
        Reply(gemini_response()),
        choice,
    )

    def generate(url: str) -> object:
        # Held in a name: a client no one holds is closed before its request goes out.
        client = genai.Client(api_key=KEY, http_options=types.HttpOptions(base_url=url))
        return client.models.generate_content(model="m", contents="Weather?", config=config)

    theirs = sent_by_the_sdk(Reply(gemini_response()), generate)
    assert only(ours, "tools", "toolConfig") == only(theirs, "tools", "toolConfig")
    assert len(ours["tools"][0]["functionDeclarations"]) == 2


TOOL_CAMPAIGN = """\
tools:
  - name: weather
    description: Current weather in a city
    parameters: {type: object, properties: {city: {type: string}}, required: [city]}
tool_choice: required
evalcases:
  - id: calls-weather-for-paris
    input_messages: [{role: user, content: Is it warm in Paris?}]
    evaluators:
      - type: tool_trajectory
        mode: exact
        expected: [{tool: weather, args: {city: Paris}}]
  - id: expected-a-search
    input_messages: [{role: user, content: Is it warm in Paris?}]
    tools: [{name: search, description: Search the web}]
    tool_choice: {name: search}
    evaluators:
      - type: tool_trajectory
        mode: exact
        expected: [{tool: search}]
"""


def test_a_tool_calling_answer_of_each_vendor_is_recorded_and_graded_through_a_real_worker(
    project: WriteFiles, private_home: Path
) -> None:
    """`evalrelay run` (a real queue and a real worker process) against a loopback server per
    vendor that answers every request with a call of `weather`: the call is in the result and
    `tool_trajectory` passes the case that expects it and fails the one that expects a search."""
    call = ("weather", {"city": "Paris"})
    replies = {
        "chat": Reply(openai_chat_tool_call(*call)),
        "responses": Reply(openai_responses_tool_call(*call)),
        "anthropic": Reply(anthropic_tool_use(*call)),
        "gemini": Reply(gemini_function_call(*call)),
    }
    with contextlib.ExitStack() as stack:
        servers = {name: stack.enter_context(serving(reply)) for name, reply in replies.items()}
        url = {name: server.url for name, server in servers.items()}
        targets = f"""\
            targets:
              - {{name: chat, provider: openai, model: g, base_url: "{url["chat"]}/v1"}}
              - {{name: responses, provider: openai, api: responses, model: g,
                  base_url: "{url["responses"]}/v1"}}
              - {{name: anthropic, provider: anthropic, model: c, base_url: "{url["anthropic"]}"}}
              - {{name: gemini, provider: gemini, model: m, base_url: "{url["gemini"]}"}}
            """
        root = project({"targets.yaml": targets, "evals/tools.yaml": TOOL_CAMPAIGN})
        done = run(
            "evals/tools.yaml",
            "--target",
            ",".join(replies),
            env=embedded_env(private_home),
            cwd=root,
        )
    assert done.returncode == 1, done.stderr  # the search case fails on every target
    (jsonl,) = (root / "results").glob("*.jsonl")
    lines = {(str(r["target"]), str(r["case_id"])): r for r in read_jsonl(jsonl)}
    assert len(lines) == 8
    for target in replies:
        passed, failed = (
            lines[target, "calls-weather-for-paris"],
            lines[target, "expected-a-search"],
        )
        for line in (passed, failed):
            assert line["status"] == "ok", line.get("error")
            recorded = [(c["name"], c["arguments"]) for c in line["artifacts"]["tool_calls"]]
            assert recorded == [call], target
        assert (passed["passed"], passed["score"]) == (True, 1.0), target
        assert (failed["passed"], failed["score"]) == (False, 0.0), target
    # Each server was sent the tools its case offers, in its vendor's shape.
    sent = {name: [seen.body for seen in server.seen] for name, server in servers.items()}
    assert all(len(bodies) == 2 for bodies in sent.values()), sent
    assert sorted(len(b["tools"]) for b in sent["chat"]) == [1, 2]
    assert {str(b["tool_choice"]) for b in sent["anthropic"]} == {
        str({"type": "any"}),
        str({"type": "tool", "name": "search"}),
    }
    assert sorted(len(b["tools"][0]["functionDeclarations"]) for b in sent["gemini"]) == [1, 2]


def pause_after(client: redis.Redis, server: VendorServer, calls: int) -> threading.Thread:
    """`evalrelay pause` of the jobs' campaign (`c`), from another thread, once the server
    has received `calls` calls."""

    def paused() -> None:
        wait_for(lambda: len(server.seen) >= calls, 30, f"{calls} calls")
        time.sleep(0.2)  # into the wait that follows
        pause(client, "c", "by hand", "me@here")

    thread = threading.Thread(target=paused, daemon=True)
    thread.start()
    return thread


def test_a_pause_during_a_retry_s_back_off_starts_no_second_call(client: redis.Redis) -> None:
    limited = Reply(
        {"error": {"message": "slow down", "type": "rate_limit"}},
        status=429,
        headers={"retry-after": "1.0"},
    )
    with serving(limited, Reply(openai_chat())) as server:
        pause_after(client, server, 1)
        with pytest.raises(Steered, match="paused"):
            execute(job(openai_target(server.url), SPEC_REQUESTS["E10"]), "w", client)
        time.sleep(1.0)
    assert len(server.seen) == 1  # the retry found the campaign paused


def test_a_pause_while_a_job_waits_for_its_rate_limit_starts_no_call(client: redis.Redis) -> None:
    """60 requests a minute: one a second. The second job waits for its turn, and is
    paused meanwhile; its call never starts."""
    with serving(Reply(openai_chat())) as server:
        target = openai_target(server.url, rpm=60)
        first = execute(job(target, SPEC_REQUESTS["E10"]), "w", client)
        assert first.status is Status.OK
        pause_after(client, server, 1)
        with pytest.raises(Steered, match="paused"):
            execute(job(target, SPEC_REQUESTS["E10"]), "w", client)
    assert len(server.seen) == 1


def test_a_judge_s_call_is_not_held_by_the_steering(client: redis.Redis) -> None:
    """Only the job's own calls are admitted: a paused campaign's judge still answers
    (its job's answer came before the pause)."""
    pause(client, "c", "by hand", "me@here")
    with serving(Reply(openai_chat())) as server:
        deadline = time.monotonic() + 20
        output = call_provider(
            job(openai_target(server.url), SPEC_REQUESTS["E10"]), deadline, client
        )
    assert output.answer == "Paris" and len(server.seen) == 1

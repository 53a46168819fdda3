"""Each provider's two call paths agree: `call_provider` (a thread's call: conversations,
regrades, agents) and `call_provider_async` (a batch's call on the worker's loop) send the
same bytes to the vendor and make the same output of the same reply, failures included.
Both go through the vendor's real SDK (its sync and its async client) against a loopback
server speaking the vendor's wire protocol."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from typing import Any

import pytest

from evalrelay.bridge.contract.job import Job
from evalrelay.worker.providers.base import ProviderFailure, ProviderOutput
from evalrelay.worker.providers.call import call_provider, call_provider_async
from tests.worker.providers.test_api import KEY, SPEC_REQUESTS, TOOLS, job, openai_target
from tests.worker.providers.vendor_server import (
    Reply,
    Seen,
    anthropic_tool_use,
    gemini_function_call,
    openai_chat_tool_call,
    openai_responses_tool_call,
    serving,
)


@pytest.fixture(autouse=True)
def keys(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("OPENAI_API_KEY", "ANTHROPIC_API_KEY", "GEMINI_API_KEY", "AZURE_OPENAI_API_KEY"):
        monkeypatch.setenv(name, KEY)


def azure(url: str) -> dict[str, Any]:
    return {"name": "az", "provider": "azure", "endpoint": url, "deployment": "dep-1",
            "api_version": "2024-10-01-preview", "retry_initial_delay_ms": 10}  # fmt: skip


def compatible(url: str) -> dict[str, Any]:
    return {"name": "local", "provider": "openai-compatible", "model": "qwen",
            "base_url": f"{url}/v1", "retry_initial_delay_ms": 10}  # fmt: skip


def anthropic(url: str) -> dict[str, Any]:
    return {"name": "c", "provider": "anthropic", "model": "m", "base_url": url,
            "retry_initial_delay_ms": 10}  # fmt: skip


def gemini(url: str) -> dict[str, Any]:
    return {"name": "g", "provider": "gemini", "model": "m", "base_url": url,
            "retry_initial_delay_ms": 10}  # fmt: skip


CALL = {"city": "Paris"}
VENDORS: dict[str, tuple[Callable[[str], dict[str, Any]], dict[str, Any]]] = {
    "openai": (openai_target, openai_chat_tool_call("weather", CALL)),
    "openai-responses": (
        lambda url: openai_target(url, api="responses"),
        openai_responses_tool_call("weather", CALL),
    ),
    "azure": (azure, openai_chat_tool_call("weather", CALL)),
    "openai-compatible": (compatible, openai_chat_tool_call("weather", CALL)),
    "anthropic": (anthropic, anthropic_tool_use("weather", CALL)),
    "gemini": (gemini, gemini_function_call("weather", CALL)),
}

VOLATILE_HEADERS = {"x-stainless-async", "x-stainless-retry-count", "x-stainless-read-timeout",
                    "x-stainless-timeout", "x-server-timeout", "user-agent",
                    "x-goog-api-client", "content-length", "host", "connection"}  # fmt: skip
"""Headers an SDK sets differently on its async client (its name, a timing) or per
connection; every other header and the whole body must match."""


def wire(seen: list[Seen]) -> list[tuple[str, dict[str, str], Any]]:
    return [
        (s.path, {k: v for k, v in s.headers.items() if k not in VOLATILE_HEADERS}, s.body)
        for s in seen
    ]


def comparable(output: ProviderOutput | BaseException) -> Any:
    """What the two paths must agree on: the output without its wall-clock timings."""
    if isinstance(output, ProviderFailure):
        return ("failure", output.status, str(output))
    if isinstance(output, BaseException):
        return ("raised", type(output).__name__, str(output))
    dumped = output.model_dump(mode="json")
    for call in dumped["artifacts"].get("calls", []):
        call.pop("duration_ms", None)
    dumped["artifacts"].pop("latency_ms", None)
    return dumped


def both_paths(make: Callable[[str], Job], *replies: Reply) -> tuple[Any, Any]:
    """(what each path sent, what it made of the replies), sync first, then async."""
    outcomes = []
    for path in ("sync", "async"):
        with serving(*replies) as server:
            the_job = make(server.url)
            deadline = time.monotonic() + 20
            try:
                if path == "sync":
                    got: ProviderOutput | BaseException = call_provider(the_job, deadline)
                else:
                    got = asyncio.run(call_provider_async(the_job, deadline))
            except Exception as exc:
                got = exc
            outcomes.append((wire(server.seen), comparable(got)))
    return outcomes[0], outcomes[1]


@pytest.mark.parametrize("vendor", sorted(VENDORS))
def test_a_tool_calling_answer_is_sent_and_read_alike(vendor: str) -> None:
    target, reply = VENDORS[vendor]
    sync, async_ = both_paths(lambda url: job(target(url), TOOLS), Reply(reply))
    assert isinstance(sync[1], dict) and sync[1]["tool_calls"], sync[1]
    assert async_ == sync


@pytest.mark.parametrize("vendor", sorted(VENDORS))
def test_a_retried_429_then_an_answer_is_alike(vendor: str) -> None:
    target, reply = VENDORS[vendor]
    busy = Reply({"error": {"message": "slow down"}}, status=429, headers={"retry-after": "0"})
    sync, async_ = both_paths(lambda url: job(target(url), SPEC_REQUESTS["E2"]), busy, Reply(reply))
    assert len(sync[0]) == 2, sync[0]  # the 429, then the answer
    assert async_ == sync


@pytest.mark.parametrize("vendor", sorted(VENDORS))
def test_an_invalid_request_fails_alike(vendor: str) -> None:
    target, _ = VENDORS[vendor]
    bad = Reply({"error": {"message": "bad request", "type": "invalid_request_error"}}, status=400)
    sync, async_ = both_paths(lambda url: job(target(url), SPEC_REQUESTS["E1"]), bad)
    assert isinstance(sync[1], tuple) and sync[1][0] == "failure", sync[1]
    assert async_ == sync

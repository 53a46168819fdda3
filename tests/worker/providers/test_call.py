"""Calling a target on an event loop (`call_provider_async`) against what the threads' path
(`call_provider`) does: through each vendor's real SDK, its async client, against the same
loopback server, the same request goes out and the same output or failure comes back."""

from __future__ import annotations

import asyncio
import os
import sys
import threading
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import pytest
import redis

from evalrelay.bridge.contract.job import Job
from evalrelay.bridge.prompt.request import PromptRequest
from evalrelay.bridge.results.result import Status
from evalrelay.bridge.targets.settings import TargetSettings
from evalrelay.worker.providers.api import close_async_clients
from evalrelay.worker.providers.base import (
    Provider,
    ProviderFailure,
    ProviderOutput,
    register,
    unregister,
)
from evalrelay.worker.providers.call import call_provider, call_provider_async
from tests.conftest import direct_job, free_port, loopback_server
from tests.worker.providers.vendor_server import (
    Reply,
    Seen,
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
QUESTION = PromptRequest(question="What is the capital of France?")


@pytest.fixture(autouse=True)
def keys(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("OPENAI_API_KEY", "ANTHROPIC_API_KEY", "GEMINI_API_KEY", "AZURE_OPENAI_API_KEY"):
        monkeypatch.setenv(name, KEY)


Answer = Callable[[str], dict[str, Any]]
ToolCall = Callable[[str, dict[str, Any]], dict[str, Any]]


def quick(settings: dict[str, Any]) -> dict[str, Any]:
    return {"retry_initial_delay_ms": 10, **settings}


VENDORS: dict[str, tuple[Callable[[str], dict[str, Any]], Answer, ToolCall]] = {
    "openai-chat": (
        lambda url: quick(
            {"name": "o", "provider": "openai", "model": "g", "base_url": f"{url}/v1"}
        ),
        openai_chat,
        openai_chat_tool_call,
    ),
    "openai-responses": (
        lambda url: quick(
            {
                "name": "r",
                "provider": "openai",
                "api": "responses",
                "model": "g",
                "base_url": f"{url}/v1",
            }
        ),
        openai_responses,
        openai_responses_tool_call,
    ),
    "azure": (
        lambda url: quick(
            {"name": "az", "provider": "azure", "endpoint": url, "deployment": "dep-1"}
        ),
        openai_chat,
        openai_chat_tool_call,
    ),
    "openai-compatible": (
        lambda url: quick(
            {"name": "l", "provider": "openai-compatible", "model": "q", "base_url": f"{url}/v1"}
        ),
        openai_chat,
        openai_chat_tool_call,
    ),
    "anthropic": (
        lambda url: quick({"name": "c", "provider": "anthropic", "model": "m", "base_url": url}),
        anthropic_message,
        anthropic_tool_use,
    ),
    "gemini": (
        lambda url: quick({"name": "g", "provider": "gemini", "model": "m", "base_url": url}),
        gemini_response,
        gemini_function_call,
    ),
}

SCENARIOS: dict[str, Callable[[Answer, ToolCall], list[Reply]]] = {
    "answer": lambda answer, _: [Reply(answer("Paris"), headers={"x-request-id": "req-42"})],
    "tool call": lambda _, tool: [Reply(tool("weather", {"city": "Paris"}))],
    "empty answer": lambda answer, _: [Reply(answer(""))],
    "429 then ok": lambda answer, _: [
        Reply({"error": {"message": "slow down"}}, status=429, headers={"retry-after": "0.2"}),
        Reply(answer("Paris")),
    ],
    "500 then ok": lambda answer, _: [
        Reply({"error": {"message": "boom"}}, status=500),
        Reply(answer("Paris")),
    ],
    "401": lambda _, __: [Reply({"error": {"message": f"bad key {KEY}"}}, status=401)],
    "400": lambda _, __: [
        Reply({"error": {"message": "bad request", "type": "invalid_request_error"}}, status=400)
    ],
    "hangs": lambda answer, _: [Reply(answer("late"), delay=3)],
}


def outcome(call: Callable[[], ProviderOutput]) -> dict[str, Any]:
    """What a call ended in, without its timings: the output, or the failure and its calls."""
    try:
        output = call()
    except ProviderFailure as failure:
        return {
            "status": failure.status,
            "message": failure.message,
            "calls": [c["status"] for c in failure.calls],
        }
    kept = output.model_dump()
    kept["artifacts"].pop("latency_ms")
    kept["artifacts"]["calls"] = [c["status"] for c in kept["artifacts"]["calls"]]
    return kept


def on_a_loop(job: Job, client: redis.Redis | None = None) -> ProviderOutput:
    async def call() -> ProviderOutput:
        try:
            return await call_provider_async(job, time.monotonic() + job.timeout_seconds, client)
        finally:
            await close_async_clients()

    return asyncio.run(call())


def on_a_thread(job: Job, client: redis.Redis | None = None) -> ProviderOutput:
    return call_provider(job, time.monotonic() + job.timeout_seconds, client)


def requests(seen: list[Seen]) -> list[tuple[str, Any]]:
    return [(s.path, s.body) for s in seen]


@pytest.mark.parametrize("scenario", list(SCENARIOS))
@pytest.mark.parametrize("vendor", list(VENDORS))
def test_the_async_path_sends_and_returns_what_the_sync_path_does(
    vendor: str, scenario: str
) -> None:
    target, answer, tool = VENDORS[vendor]
    replies = SCENARIOS[scenario](answer, tool)
    ended: dict[str, dict[str, Any]] = {}
    sent: dict[str, list[Seen]] = {}
    for path, call in (("sync", on_a_thread), ("async", on_a_loop)):
        with serving(*replies) as server:
            settings = target(server.url)
            if scenario == "hangs":
                settings |= {"timeout_seconds": 0.5, "max_retries": 1}
            job = direct_job(settings, request=QUESTION, timeout_seconds=20)
            ended[path] = outcome(lambda: call(job))  # noqa: B023 (called at once)
        sent[path] = server.seen
    if scenario == "hangs":  # the clients' HTTP libraries name their timeouts differently
        for path in ended:
            assert ended[path].pop("message").endswith("the request timed out")
    assert ended["async"] == ended["sync"]
    assert requests(sent["async"]) == requests(sent["sync"])
    # Each scenario ends as the sync tests (test_api.py) require.
    expected = {
        "answer": ("Paris", ["ok"]),
        "tool call": ("", ["ok"]),
        "empty answer": ("", ["ok"]),
        "429 then ok": ("Paris", ["rate_limited", "ok"]),
        "500 then ok": ("Paris", ["infra_error", "ok"]),
        "401": (Status.INFRA_ERROR, ["infra_error"]),
        "400": (Status.INVALID_INPUT, ["invalid_input"]),
        "hangs": (Status.TIMEOUT, ["timeout", "timeout"]),
    }[scenario]
    got = ended["async"]
    assert (
        got.get("answer", got.get("status")),
        got.get("calls") or got["artifacts"]["calls"],
    ) == (expected)
    if scenario == "tool call":
        assert got["tool_calls"][0]["name"] == "weather"
        assert got["tool_calls"][0]["arguments"] == {"city": "Paris"}
    if scenario == "answer":
        assert got["usage"]["input_tokens"] == 11 and got["usage"]["output_tokens"] == 3
    if scenario == "empty answer":
        assert "empty answer" in got["model_failure"]
    if scenario == "429 then ok":
        first, second = sent["async"]
        assert second.at - first.at >= 0.2


def test_the_async_path_answers_from_the_cache_and_keeps_what_it_got(
    client: redis.Redis,
) -> None:
    with serving(Reply(openai_chat("Paris"))) as server:
        target = VENDORS["openai-chat"][0](server.url)
        job = direct_job(target, request=QUESTION, cache_ttl_seconds=60)
        first = on_a_loop(job, client)
        again = on_a_loop(job, client)
        by_thread = on_a_thread(job, client)
    assert len(server.seen) == 1
    assert (first.answer, again.answer, by_thread.answer) == ("Paris", "Paris", "Paris")
    assert "cached" not in first.artifacts
    assert again.artifacts["cached"] is by_thread.artifacts["cached"] is True


def test_the_async_path_takes_the_targets_rate_limit(client: redis.Redis) -> None:
    """rpm 60 is one request a second: three calls at once on one loop go out a second
    apart, the loop free meanwhile."""
    with serving(Reply(openai_chat("Paris"))) as server:
        target = VENDORS["openai-chat"][0](server.url) | {"rpm": 60}
        jobs = [direct_job(target, request=QUESTION, job_id=f"j{i}") for i in range(3)]

        async def three() -> list[ProviderOutput]:
            try:
                return list(
                    await asyncio.gather(
                        *(call_provider_async(j, time.monotonic() + 10, client) for j in jobs)
                    )
                )
            finally:
                await close_async_clients()

        outputs = asyncio.run(three())
    assert [o.answer for o in outputs] == ["Paris"] * 3
    times = sorted(s.at for s in server.seen)
    assert times[1] - times[0] >= 0.9 and times[2] - times[1] >= 0.9


def test_a_provider_without_an_async_call_runs_on_a_thread_of_its_own() -> None:
    ran_on: list[int] = []

    class Blocking(Provider):
        def run(self, job: Job, deadline: float) -> ProviderOutput:
            ran_on.append(threading.get_ident())
            time.sleep(1.0)
            return ProviderOutput(answer="done")

    def blocking(settings: TargetSettings) -> Provider:
        return Blocking(settings)

    register(("mock",), blocking)
    try:
        job = direct_job(request=QUESTION)

        async def two() -> tuple[list[ProviderOutput], float]:
            started = time.monotonic()
            outputs = await asyncio.gather(
                call_provider_async(job, time.monotonic() + 5),
                call_provider_async(job, time.monotonic() + 5),
            )
            return list(outputs), time.monotonic() - started

        outputs, took = asyncio.run(two())
    finally:
        unregister(("mock",))
    assert [o.answer for o in outputs] == ["done", "done"]
    assert threading.get_ident() not in ran_on
    assert took < 1.8  # the two blocking calls ran at once (one after the other: 2 s)


CALLS = 200
DELAY = 2.0
DNS_THREADS = min(32, (os.cpu_count() or 1) + 4)
"""asyncio's default executor, where a loop resolves host names: bounded, not per call."""


async def gathered(calls: list[Callable[[], Awaitable[object]]]) -> tuple[float, int]:
    """Seconds for these calls at once, and the most threads this process gained meanwhile."""
    before = most = threading.active_count()

    async def count_threads() -> None:
        nonlocal most
        while True:
            most = max(most, threading.active_count())
            await asyncio.sleep(0.01)

    counting = asyncio.create_task(count_threads())
    started = time.monotonic()
    await asyncio.gather(*(call() for call in calls))
    took = time.monotonic() - started
    counting.cancel()
    return took, most - before


def test_200_calls_on_one_loop_take_about_one_delay_and_no_thread_each(tmp_path: Path) -> None:
    """A server that answers after DELAY, on an event loop in its own process (its threads
    are not counted): 200 calls at once end about together, as fast as the bare async
    OpenAI client does them, and this process gains no thread per call."""
    import openai

    port = free_port()
    argv = [sys.executable, "-m", "bench.slow_openai", "--port", str(port), "--delay", str(DELAY)]
    url = f"http://127.0.0.1:{port}"
    target = {
        "name": "slow",
        "provider": "openai-compatible",
        "model": "m",
        "base_url": f"{url}/v1",
    }
    jobs = [direct_job(target, request=QUESTION, job_id=f"j{i}") for i in range(CALLS)]

    async def measured() -> tuple[list[tuple[float, int]], list[float]]:
        """Ours and the bare client's, taking turns (the machine's load moves), each after
        a first round that made its connections and threads."""
        client = openai.AsyncOpenAI(base_url=f"{url}/v1", api_key="k", max_retries=0)
        message = [{"role": "user", "content": "q"}]
        theirs = [
            lambda: client.chat.completions.create(model="m", messages=message)  # type: ignore[arg-type]
        ] * CALLS
        mine = [lambda j=j: call_provider_async(j, time.monotonic() + 30) for j in jobs]
        try:
            ours = [await gathered(mine)]
            await gathered(theirs)
            bare: list[float] = []
            for _ in range(2):
                ours.append(await gathered(mine))
                bare.append((await gathered(theirs))[0])
            return ours, bare
        finally:
            await client.close()
            await close_async_clients()

    with loopback_server(argv, url, tmp_path / "server.log", 30):
        ours, bare = asyncio.run(measured())
    (first, first_threads), *again = ours
    took = min(t for t, _ in again)
    more_threads = max(n for _, n in again)
    bare_took = min(bare)
    figures = f"ours {first:.2f} s then {took:.2f} s, the bare client {bare_took:.2f} s"
    # The calls overlap: one at a time would take CALLS delays, DNS_THREADS threads
    # CALLS / DNS_THREADS. Past the one delay, the time is the SDK's own work per call (its
    # CPU, shared with the machine's load), which the bare client spends too.
    assert took < CALLS * DELAY / DNS_THREADS / 4, figures
    assert took <= bare_took * 1.3 + 0.2, figures
    assert first_threads <= DNS_THREADS, f"{first_threads} threads more in the first round"
    assert more_threads == 0, f"{more_threads} threads more in the second round"

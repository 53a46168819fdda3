"""What every HTTP API provider shares: the cache, the shared rate limit, retries, and the
key read from this worker's environment.

A vendor module supplies `body(messages, tools, tool_choice)`, the request body in its wire
format (what `evalrelay render --target` shows), and `send(body, timeout)`, which makes one
call through the vendor's SDK (its own retries off) and turns the response into a
`ProviderOutput`; `aconnect` and `asend` do the same through the SDK's async client, for
`arun` on a worker's event loop.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import os
import socket
import threading
import time
import weakref
from abc import abstractmethod
from collections.abc import Sequence
from contextlib import nullcontext
from dataclasses import dataclass
from typing import Any

from evalrelay.bridge.contract.job import Job
from evalrelay.bridge.evalfile.tools import ToolChoice, ToolDefinition
from evalrelay.bridge.keys import PREFIX
from evalrelay.bridge.prompt.messages import ChatMessage
from evalrelay.bridge.prompt.request import api_messages
from evalrelay.bridge.results.result import Status
from evalrelay.bridge.targets.live_limits import LIVE
from evalrelay.bridge.targets.settings import ApiTargetBase, ApiTargetSettings, TargetSettings
from evalrelay.worker.providers._openai import JsonDict
from evalrelay.worker.providers.admission import Admission
from evalrelay.worker.providers.base import Provider, ProviderFailure, ProviderOutput, provider_for
from evalrelay.worker.providers.failures import classify_exception
from evalrelay.worker.providers.limits import RateGate
from evalrelay.worker.providers.retry import RetryPolicy, awith_retries, with_retries

_clients: dict[tuple[str, str, str], Any] = {}
_async_clients: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, dict[Any, Any]] = (
    weakref.WeakKeyDictionary()
)
_clients_lock = threading.Lock()

REFUSALS = ("content_filter", "refusal", "SAFETY", "RECITATION", "PROHIBITED_CONTENT")
"""Finish reasons that mean the model declined: a model failure, not an infrastructure one."""


@dataclass(frozen=True)
class _Call:
    """One job's request, as every attempt sends it."""

    body: JsonDict
    cache_key: str
    tokens: int
    """What the call may cost of the target's tokens per minute: an estimate."""


class ApiProvider(Provider):
    settings: ApiTargetSettings
    sdk: str = ""
    """The optional extra that installs this vendor's SDK: `pip install 'evalrelay[sdk]'`."""

    @abstractmethod
    def connect(self) -> Any:
        """The vendor's SDK client, its own retries off; built before any rate limit is taken
        so that importing an SDK never delays a request that already holds its turn."""

    @abstractmethod
    def aconnect(self) -> Any:
        """`connect` for `asend`: the SDK's async client, which belongs to the event loop
        it is built on (built by `_aclient`, once per process and loop)."""

    @abstractmethod
    def body(
        self,
        messages: Sequence[ChatMessage],
        tools: Sequence[ToolDefinition] = (),
        tool_choice: ToolChoice | None = None,
    ) -> JsonDict:
        """The vendor's request body for these neutral messages and the functions offered;
        pure, no SDK needed."""

    @abstractmethod
    def send(self, client: Any, body: dict[str, Any], timeout: float) -> ProviderOutput:
        """One call to the vendor; raises the SDK's exceptions."""

    @abstractmethod
    async def asend(self, client: Any, body: dict[str, Any], timeout: float) -> ProviderOutput:
        """`send` through the async client of `aconnect`; the same request and parsing."""

    def endpoint(self) -> str:
        return self.settings.base_url or ""

    def run(self, job: Job, deadline: float) -> ProviderOutput:
        call = self._call(job)
        cached = self._cached(job, call)
        if cached is not None:
            return cached
        gate = self._gate()
        admission = self._admission(job)
        client = self._client()

        def attempt(remaining: float) -> ProviderOutput:
            timeout = self._timeout(remaining)
            with gate.call(deadline, call.tokens) if gate else nullcontext():
                if admission is None:
                    return self.send(client, call.body, timeout)
                admission.admit(deadline)
                try:
                    return self.send(client, call.body, timeout)
                except BaseException:
                    admission.failed()
                    raise

        output, calls = with_retries(attempt, classify_exception, deadline, self.retry_policy())
        return self._finished(job, call, output, calls)

    async def arun(self, job: Job, deadline: float) -> ProviderOutput:
        """`run` on an event loop, through the SDK's async client: no thread per call."""
        call = self._call(job)
        cached = self._cached(job, call)
        if cached is not None:
            return cached
        gate = self._gate()
        admission = self._admission(job)
        client = self._aclient()

        async def attempt(remaining: float) -> ProviderOutput:
            timeout = self._timeout(remaining)
            async with gate.acall(deadline, call.tokens) if gate else nullcontext():
                if admission is None:
                    return await self.asend(client, call.body, timeout)
                await admission.aadmit(deadline)
                try:
                    return await self.asend(client, call.body, timeout)
                except BaseException:
                    admission.failed()
                    raise

        output, calls = await awith_retries(
            attempt, classify_exception, deadline, self.retry_policy()
        )
        return self._finished(job, call, output, calls)

    def _call(self, job: Job) -> _Call:
        request = job.request
        body = self.body(api_messages(request), request.tools or (), request.tool_choice)
        tokens = len(json.dumps(body)) // 4 + (self.settings.max_output_tokens or 0)
        cache_key = self._cache_key(body) if job.cache_ttl_seconds else ""  # only when kept
        return _Call(body=body, cache_key=cache_key, tokens=tokens)

    def _cached(self, job: Job, call: _Call) -> ProviderOutput | None:
        """The answer kept for this same request, when the job allows one."""
        if not (job.cache_ttl_seconds and self.redis is not None):
            return None
        cached = self.redis.get(call.cache_key)
        if not cached:
            return None
        output = ProviderOutput.model_validate_json(cached)
        output.artifacts["cached"] = True
        return output

    def _finished(
        self, job: Job, call: _Call, output: ProviderOutput, calls: list[dict[str, Any]]
    ) -> ProviderOutput:
        """The output with its calls; kept for the cache's time unless the model failed."""
        output.artifacts["calls"] = calls
        if job.cache_ttl_seconds and self.redis is not None and not output.model_failure:
            self.redis.set(call.cache_key, output.model_dump_json(), ex=job.cache_ttl_seconds)
        return output

    def _timeout(self, remaining: float) -> float:
        timeout = min(remaining, self.settings.timeout_seconds or remaining)
        if timeout <= 0:
            raise ProviderFailure(Status.TIMEOUT, "the job's time limit ran out")
        return timeout

    def _client(self) -> Any:
        """SDK clients are thread-safe and costly to build (TLS setup): one per process and
        set of settings, shared by the jobs that use them."""
        identity = self._identity()
        with _clients_lock:
            if identity not in _clients:
                _clients[identity] = self.connect()
            return _clients[identity]

    def _aclient(self) -> Any:
        """As `_client`, per event loop too: an async client's connections belong to the
        loop that opened them. A loop's clients go with it."""
        loop, identity = asyncio.get_running_loop(), self._identity()
        with _clients_lock:
            clients = _async_clients.get(loop)  # `setdefault` would make a weakref each call
            if clients is None:
                clients = _async_clients[loop] = {}
            if identity not in clients:
                clients[identity] = self.aconnect()
            return clients[identity]

    def _identity(self) -> tuple[str, str, str]:
        """What makes two clients the same: the provider, its settings and its key."""
        name = self.settings.key_env()
        return (
            type(self).__name__,
            self.settings.model_dump_json(),
            hashlib.sha256((os.environ.get(name) or "").encode()).hexdigest() if name else "",
        )

    def api_key(self, required: bool = True) -> str:
        name = self.settings.key_env()
        value = os.environ.get(name) if name else None
        if value:
            return value
        if not required:
            return "unused"
        raise ProviderFailure(
            Status.INFRA_ERROR,
            f"environment variable {name} is not set on "
            f"worker host {socket.gethostname()}; set it where workers run",
        )

    def missing_sdk(self, module: str) -> ProviderFailure:
        return ProviderFailure(
            Status.INFRA_ERROR,
            f"the {self.settings.provider} provider needs "
            f"the {module} package on this worker: pip install "
            f"'evalrelay[{self.sdk}]'",
        )

    def retry_policy(self) -> RetryPolicy:
        s = self.settings
        return RetryPolicy(
            max_retries=s.max_retries,
            initial_delay=s.retry_initial_delay_ms / 1000,
            max_delay=s.retry_max_delay_ms / 1000,
            max_seconds=s.retry_max_seconds,
        )

    def _gate(self) -> RateGate | None:
        """The target's limits: those set live (`evalrelay limit`) over its settings'."""
        s = self.settings
        if self.redis is None:
            return None
        live = LIVE.get(self.redis, s.name)
        rpm, tpm = live.rpm or s.rpm, live.tpm or s.tpm
        concurrency = live.max_concurrency or s.max_concurrency
        if not (rpm or tpm or concurrency):
            return None
        return RateGate(self.redis, s.name, rpm=rpm, tpm=tpm, max_concurrency=concurrency)

    def _admission(self, job: Job) -> Admission | None:
        """Admits each of the job's own calls after its waits (none for a judge's call)."""
        if not self.steered or self.redis is None:
            return None
        return Admission(self.redis, job)

    def _cache_key(self, body: dict[str, Any]) -> str:
        identity = json.dumps([self.settings.provider, self.endpoint(), body], sort_keys=True)
        return f"{PREFIX}:cache:{hashlib.sha256(identity.encode()).hexdigest()}"


async def close_async_clients() -> None:
    """Closes the SDK clients of the running loop, before it ends: their connections
    belong to it and cannot close once it is gone."""
    with _clients_lock:
        clients = _async_clients.pop(asyncio.get_running_loop(), {})
    for client in clients.values():
        # google-genai's client closes its async side through `aio`; the others close.
        await (client.aio.aclose() if hasattr(client, "aio") else client.close())


def request_body(
    settings: TargetSettings,
    messages: Sequence[ChatMessage],
    tools: Sequence[ToolDefinition] = (),
    tool_choice: ToolChoice | None = None,
) -> JsonDict | None:
    """The body an API target sends for these messages and tools; None for targets that
    are not APIs."""
    if not isinstance(settings, ApiTargetBase):
        return None
    provider = provider_for(settings)
    if not isinstance(provider, ApiProvider):
        return None
    return provider.body(messages, tools, tool_choice)


def finish(answer: str, reason: str | None, tool_calls: list[dict[str, Any]]) -> str | None:
    """Why a response is a model failure, or None when it is an answer."""
    if reason and any(r.lower() == reason.lower() for r in REFUSALS):
        return f"the model declined (finish reason {reason})"
    if not answer.strip() and not tool_calls:
        return f"the model returned an empty answer (finish reason {reason})"
    return None


def no_turns(vendor: str) -> ProviderFailure:
    return ProviderFailure(
        Status.INVALID_INPUT,
        f"{vendor} needs at least one user or assistant "
        "turn, and this case has only a system message; add a user message",
    )


def elapsed_ms(began: float) -> int:
    return int((time.monotonic() - began) * 1000)

"""What every HTTP API provider shares: the cache, the shared rate limit, retries, and the
key read from this worker's environment.

A vendor module supplies `body(messages, tools, tool_choice)`, the request body in its wire
format (what `evalrelay render --target` shows), and `send(body, timeout)`, which makes one
call through the vendor's SDK (its own retries off) and turns the response into a
`ProviderOutput`.
"""

from __future__ import annotations

import hashlib
import json
import os
import socket
import threading
import time
from abc import abstractmethod
from collections.abc import Sequence
from contextlib import nullcontext
from typing import Any

from bridge.evalfile.tools import ToolChoice, ToolDefinition
from bridge.keys import PREFIX
from bridge.prompt.build import api_messages
from bridge.prompt.messages import ChatMessage
from bridge.queue.jobs import Job
from bridge.results.result import Status
from bridge.targets.live_limits import LIVE
from bridge.targets.settings import ApiTargetBase, ApiTargetSettings, TargetSettings
from worker.providers._openai import JsonDict
from worker.providers.base import Provider, ProviderFailure, ProviderOutput, provider_for
from worker.providers.failures import classify_exception
from worker.providers.limits import RateGate
from worker.providers.retry import RetryPolicy, with_retries

_clients: dict[tuple[str, str, str], Any] = {}
_clients_lock = threading.Lock()

REFUSALS = ("content_filter", "refusal", "SAFETY", "RECITATION", "PROHIBITED_CONTENT")
"""Finish reasons that mean the model declined: a model failure, not an infrastructure one."""


class ApiProvider(Provider):
    settings: ApiTargetSettings
    sdk: str = ""
    """The optional extra that installs this vendor's SDK: `pip install 'evalrelay[sdk]'`."""

    @abstractmethod
    def connect(self) -> Any:
        """The vendor's SDK client, its own retries off; built before any rate limit is taken
        so that importing an SDK never delays a request that already holds its turn."""

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

    def endpoint(self) -> str:
        return self.settings.base_url or ""

    def run(self, job: Job, deadline: float) -> ProviderOutput:
        request = job.request
        body = self.body(api_messages(request), request.tools or (), request.tool_choice)
        key = self._cache_key(body)
        if job.cache_ttl_seconds and self.redis is not None:
            cached = self.redis.get(key)
            if cached:
                output = ProviderOutput.model_validate_json(cached)
                output.artifacts["cached"] = True
                return output
        gate = self._gate()
        tokens = len(json.dumps(body)) // 4 + (self.settings.max_output_tokens or 0)
        client = self._client()

        def attempt(remaining: float) -> ProviderOutput:
            timeout = min(remaining, self.settings.timeout_seconds or remaining)
            if timeout <= 0:
                raise ProviderFailure(Status.TIMEOUT, "the job's time limit ran out")
            with gate.call(deadline, tokens) if gate else nullcontext():
                return self.send(client, body, timeout)

        output, calls = with_retries(attempt, classify_exception, deadline, self.retry_policy())
        output.artifacts["calls"] = calls
        if job.cache_ttl_seconds and self.redis is not None and not output.model_failure:
            self.redis.set(key, output.model_dump_json(), ex=job.cache_ttl_seconds)
        return output

    def _client(self) -> Any:
        """SDK clients are thread-safe and costly to build (TLS setup): one per process and
        set of settings, shared by the jobs that use them."""
        name = self.settings.key_env()
        identity = (
            type(self).__name__,
            self.settings.model_dump_json(),
            hashlib.sha256((os.environ.get(name) or "").encode()).hexdigest() if name else "",
        )
        with _clients_lock:
            if identity not in _clients:
                _clients[identity] = self.connect()
            return _clients[identity]

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

    def _cache_key(self, body: dict[str, Any]) -> str:
        identity = json.dumps([self.settings.provider, self.endpoint(), body], sort_keys=True)
        return f"{PREFIX}:cache:{hashlib.sha256(identity.encode()).hexdigest()}"


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

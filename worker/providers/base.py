"""What a provider is, how providers are found, and how their failures become statuses.

A provider has one required method, `run(job, deadline)`; `arun` is its event-loop
version, native for the API providers and the mock. Known failures surface as
`ProviderFailure` with a status; anything else is an `infra_error`. Providers register
in a map from kind to a factory, so an SDK is imported only when its kind is used.
"""

from __future__ import annotations

import asyncio
import threading
import time
from abc import ABC, abstractmethod
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import redis
from pydantic import BaseModel, ConfigDict, Field

from evalrelay.bridge.contract.job import Job
from evalrelay.bridge.results.changes import WorkspaceChanges
from evalrelay.bridge.results.result import Status, Usage
from evalrelay.bridge.results.trajectory import Trajectory
from evalrelay.bridge.targets.settings import TargetSettings

if TYPE_CHECKING:  # named in an annotation only
    from evalrelay.bridge.results.result import TurnResult


class ProviderOutput(BaseModel):
    model_config = ConfigDict(extra="forbid")

    answer: str
    usage: Usage | None = None
    model: str | None = None
    finish_reason: str | None = None
    request_id: str | None = None
    tool_calls: list[dict[str, Any]] = Field(default_factory=list)
    """`{id?, name, arguments}` per call the model (or agent) made, in order."""
    cost_usd: float | None = None
    """What the call cost, when the provider says."""
    llm_calls: int | None = None
    """How many model calls an agent made, when it says."""
    model_failure: str | None = None
    """Why the answer is the model's failure (a refusal, an empty answer), when it is one."""
    artifacts: dict[str, Any] = Field(default_factory=dict)
    trajectory: Trajectory | None = None
    """An agent's steps, read from its event stream."""
    workspace_changes: WorkspaceChanges | None = None
    workspace: str | None = None
    """The agent's workspace folder on this worker, for evaluators that look into it."""


class ProviderFailure(Exception):
    """Raised by a provider for a failure it recognises; carries the result status."""

    def __init__(
        self,
        status: Status,
        message: str,
        retry_after: float | None = None,
        *,
        retryable: bool = False,
        kind: str | None = None,
    ) -> None:
        super().__init__(message)
        self.status = status
        self.message = message
        self.kind = kind or status.value
        """The result's `error.kind`: the status, or a finer name (`resource_limit`)."""
        self.retry_after = retry_after
        self.retryable = retryable
        self.trajectory: Trajectory | None = None
        self.workspace_changes: WorkspaceChanges | None = None
        """An agent's steps and workspace changes until it failed."""
        self.calls: list[dict[str, Any]] = []
        """Every vendor call this failure ended, oldest first (see `worker.providers.retry`)."""
        self.artifacts: dict[str, Any] = {}
        """What the provider kept of the attempt (an agent's request file, timings)."""
        self.turns: list[TurnResult] | None = None
        """A conversation's turns done before this failure ended it."""


class NoCapacity(Exception):
    """The job cannot start on this worker now (every workspace is busy).

    The job goes back to its queue to be tried again in `retry_in` seconds, so the worker
    slot is free for a job that can run.
    """

    def __init__(self, message: str, retry_in: float) -> None:
        super().__init__(message)
        self.retry_in = retry_in


class Steered(Exception):
    """The job's campaign was paused or cancelled, or its budget cannot cover the call,
    while the job waited to call its target: the call does not start, and the job goes
    back to its queue, where its next delivery finds the campaign's state."""

    def __init__(self, why: str) -> None:
        super().__init__(f"campaign {why} before the call started")
        self.why = why

    @property
    def late(self) -> bool:
        """The campaign is complete and compacted: this is a late copy of a job that has
        its line, dropped rather than sent back to its queue."""
        return self.why == "compacted"


class Provider(ABC):
    """One kind of system under test."""

    redis: redis.Redis | None = None
    """Set by the worker before `run`: for shared rate limits and the response cache."""
    steered: bool = False
    """Set by the worker for a job's own calls, each admitted by its campaign's steering
    and budget right before it starts (`worker.providers.admission`); a judge's are not."""

    def __init__(self, settings: TargetSettings) -> None:
        self.settings = settings

    @abstractmethod
    def run(self, job: Job, deadline: float) -> ProviderOutput:
        """Answer the job before `deadline` (a `time.monotonic()` value) or raise."""

    async def arun(self, job: Job, deadline: float) -> ProviderOutput:
        """`run` for an event loop. This default, the one place a call goes to a thread,
        serves providers that block by nature (agents, commands); API providers and the
        mock override it and hold no thread while they wait."""
        return await asyncio.to_thread(self.run, job, deadline)

    @staticmethod
    def remaining(deadline: float) -> float:
        left = deadline - time.monotonic()
        if left <= 0:
            raise ProviderFailure(Status.TIMEOUT, "the job's time limit ran out")
        return left


ProviderFactory = Callable[[TargetSettings], Provider]

_factories: dict[str, ProviderFactory] = {}
_builtins_loaded = False


def register(kinds: tuple[str, ...], factory: ProviderFactory) -> None:
    """Make `factory` the provider of these kinds; it replaces a built-in of the same kind."""
    _load_builtins()
    for kind in kinds:
        _factories[kind] = factory


def unregister(kinds: tuple[str, ...]) -> None:
    """Remove these kinds; built-ins come back on the next lookup."""
    global _builtins_loaded
    for kind in kinds:
        _factories.pop(kind, None)
    _builtins_loaded = False


def provider_for(settings: TargetSettings) -> Provider:
    _load_builtins()
    try:
        factory = _factories[settings.provider]
    except KeyError:
        raise ProviderFailure(
            Status.INFRA_ERROR, f"this worker has no provider for kind '{settings.provider}'"
        ) from None
    return factory(settings)


def _load_builtins() -> None:
    """Once, under a lock: the threads of a fresh worker take their first jobs together,
    and one that saw the flag before the kinds were in found no provider for any."""
    global _builtins_loaded
    if _builtins_loaded:
        return
    with _loading:
        if not _builtins_loaded:
            for kind, factory in _builtin_factories().items():
                _factories.setdefault(kind, factory)
            _builtins_loaded = True


_loading = threading.Lock()


def _builtin_factories() -> dict[str, ProviderFactory]:
    """Each vendor module is imported when its kind is first used; SDKs even later."""

    def lazy(module: str, cls: str) -> ProviderFactory:
        def factory(settings: TargetSettings) -> Provider:
            import importlib

            provider: Provider = getattr(importlib.import_module(module), cls)(settings)
            return provider

        return factory

    openai = lazy("evalrelay.worker.providers.openai", "OpenAIProvider")
    azure = lazy("evalrelay.worker.providers.azure", "AzureProvider")
    anthropic = lazy("evalrelay.worker.providers.anthropic", "AnthropicProvider")
    gemini = lazy("evalrelay.worker.providers.gemini", "GeminiProvider")
    vscode = lazy("evalrelay.worker.providers.vscode", "VSCodeProvider")
    codex = lazy("evalrelay.worker.providers.codex", "CodexProvider")
    copilot = lazy("evalrelay.worker.providers.copilot_cli", "CopilotCliProvider")
    return {
        "mock": lazy("evalrelay.worker.providers.mock", "MockProvider"),
        "openai": openai,
        "openai-compatible": openai,
        "azure": azure,
        "azure-openai": azure,
        "anthropic": anthropic,
        "gemini": gemini,
        "google": gemini,
        "google-gemini": gemini,
        "vscode": vscode,
        "vscode-insiders": vscode,
        "codex": codex,
        "codex-cli": codex,
        "copilot-cli": copilot,
        "copilot": copilot,
        "claude-code": lazy("evalrelay.worker.providers.claude_code", "ClaudeCodeProvider"),
        "cli": lazy("evalrelay.worker.providers.cli", "CliProvider"),
    }

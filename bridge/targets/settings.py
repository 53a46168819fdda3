"""Settings of each provider kind, one model per kind, as written in `targets.yaml`.

API keys are never written here: `api_key` names an environment variable (`${VAR}`),
which only the worker that calls the vendor reads. So no key can reach a job, a result
or a log line from the submitting side.
"""

from __future__ import annotations

import re
from typing import Annotated, Any, ClassVar, Literal

import regex
from pydantic import (
    AfterValidator,
    AliasChoices,
    BaseModel,
    ConfigDict,
    Field,
    NonNegativeFloat,
    NonNegativeInt,
    PositiveFloat,
    PositiveInt,
    model_validator,
)

from evalrelay.bridge.evalfile.evaluators import compile_regex
from evalrelay.bridge.evalfile.limits import Seconds
from evalrelay.bridge.targets.cli_command import check_no_placeholder_in_scripts
from evalrelay.bridge.targets.key_variables import DEFAULT_KEY_VARIABLES as DEFAULT_KEY_VARIABLES

ENV_REFERENCE = re.compile(
    r"\$\{\{\s*([A-Za-z_][A-Za-z0-9_]*)\s*\}\}|\$\{([A-Za-z_][A-Za-z0-9_]*)\}"
)
"""`${VAR}`, or AgentV's `${{ VAR }}`."""


def _env_name(value: str) -> str:
    match = ENV_REFERENCE.fullmatch(value.strip())
    if not match:
        raise ValueError(
            "must name an environment variable, like ${OPENAI_API_KEY}: a key "
            "written in the file would travel with every job"
        )
    return match.group(1) or match.group(2)


EnvName = Annotated[str, AfterValidator(_env_name)]
"""An environment variable's name, written `${VAR}`; its value is read by the worker."""


class TargetBase(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True, populate_by_name=True)

    name: str = Field(min_length=1)
    judge_target: str | None = None
    """The target that grades this one's answers with `llm_judge`."""
    system_prompt: str | None = None
    timeout_seconds: Seconds | None = None
    workers: PositiveInt | None = None
    """AgentV's concurrency for this target: at most this many of its jobs at once across
    all workers (API targets: `max_concurrency` unless that is set)."""
    provider_batching: bool | None = None
    """AgentV's option to send several cases in one provider call. Here every job is its
    own call, whatever it says: the results are the same, only the number of calls
    differs. AgentV removed it in July 2026 (batching is the provider's own business):
    `validate` warns (`batch_notes`); a catalog's `providerBatching` is read as it."""
    batch_requests: bool | None = None
    """AgentV's later name for `provider_batching`, removed with it; read the same way."""


BATCH_KEYS = ("provider_batching", "providerBatching", "batch_requests")
"""AgentV's runner-level batching settings, read and warned about."""


def batch_notes(name: str, raw: dict[str, Any]) -> list[str]:
    """A warning for each runner-level batching setting a target carries."""
    return [
        f"target '{name}': {key} is AgentV's runner-level batching, which AgentV removed in "
        "July 2026 (a provider batches on its own, behind one call per case); evalrelay "
        "sends each case as its own call whatever it says: remove it"
        for key in BATCH_KEYS
        if key in raw
    ]


SANDBOX_IMAGE = "evalrelay-sandbox:bookworm"
"""The image `runtime: sandbox` runs agents in under Docker, unless `isolation.image` names
another; a worker whose engine lacks it builds it from `worker/agents/sandbox.Dockerfile`."""


class Isolation(BaseModel):
    """How `runtime: sandbox` confines an agent (`worker.agents.sandbox`)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    engine: Literal["auto", "docker", "bubblewrap"] = "auto"
    """What confines the agent: a Docker container, or bubblewrap's namespaces; `auto` is
    Docker when an engine answers on the worker, else bubblewrap."""
    image: str = Field(default=SANDBOX_IMAGE, min_length=1)
    """The Docker image the agent runs in: it brings the system (a shell, the agent's
    runtime such as Node.js, and Python 3 for the relay to `network`); the agent's own
    program is mounted from the worker."""
    network: list[str] = Field(default_factory=list)
    """`host:port` endpoints the agent may reach, such as its model server
    (`api.openai.com:443`, `127.0.0.1:8080`); nothing else is reachable, Redis included."""
    read: list[str] = Field(default_factory=list)
    """More folders the agent may read (an interpreter its command needs, say); the system's
    own folders, the agent's program and its workspace need no mention."""
    memory_mb: PositiveInt = 4096
    """Memory of all the agent's processes together; over it, the attempt is stopped (Docker:
    its cgroup's memory; bubblewrap: their resident memory, looked at 5 times a second,
    each process's address space held to twice it)."""
    processes: PositiveInt = 512
    """Processes and threads the agent may run at once (the sandbox's own helpers count);
    reaching it stops the attempt."""
    cpus: PositiveFloat | None = None
    """CPUs' worth of time the agent may use (`1.5`); Docker only, bubblewrap cannot hold it."""

    @model_validator(mode="after")
    def _cpus_need_docker(self) -> Isolation:
        if self.cpus is not None and self.engine == "bubblewrap":
            raise ValueError(
                "cpus needs engine docker (or auto with a Docker engine on the worker): "
                "bubblewrap cannot hold an agent's CPU use; remove cpus or change the engine"
            )
        return self


class AgentTargetBase(TargetBase):
    """What command-line agents share: the agent is untrusted, so it gets a clean
    environment, and may run in a sandbox."""

    runtime: Literal["host", "sandbox"] = "host"
    """`host`: as the worker's user, with the worker's files and network in reach (only
    its environment is clean); `sandbox`: in a Docker container or under bubblewrap
    (`isolation.engine`), with only its workspace writable, no other file of the
    worker's, and only `isolation.network` reachable."""
    isolation: Isolation = Field(default_factory=Isolation)
    """What `runtime: sandbox` lets the agent reach."""
    inherit_env: list[str] = Field(default_factory=list)
    """More of the worker's environment variables the agent gets (names, or `PREFIX_*`)
    beyond the few any program needs and its own vendor's."""
    output_limit_bytes: PositiveInt = 8_000_000
    """What is kept of the agent's standard output and error (and of a `cli` agent's
    answer file): past it the text is cut, and the result says so."""


class ApiTargetBase(TargetBase):
    model: str | None = None
    base_url: str | None = None
    api_key: EnvName | None = None
    temperature: NonNegativeFloat | None = None
    max_output_tokens: PositiveInt | None = Field(default=None, alias="max_tokens")
    extra_body: dict[str, Any] = Field(default_factory=dict)
    rpm: PositiveInt | None = None
    """Requests per minute for this target across all workers."""
    tpm: PositiveInt | None = None
    """Tokens per minute for this target across all workers."""
    max_concurrency: PositiveInt | None = None
    """At most this many of this target's calls at once, across all workers."""
    max_retries: NonNegativeInt = 3
    retry_initial_delay_ms: NonNegativeInt = 1000
    retry_max_delay_ms: NonNegativeInt = 60_000
    retry_max_seconds: PositiveFloat = 300.0
    """Retries of one job stop after this long, whatever the count."""

    KEY_ENV: ClassVar[str | None] = None
    """The variable read for the key when `api_key` is not set."""

    def key_env(self) -> str | None:
        return self.api_key or self.KEY_ENV

    @model_validator(mode="after")
    def _workers_as_concurrency(self) -> ApiTargetBase:
        if self.max_concurrency is None and self.workers is not None:
            object.__setattr__(self, "max_concurrency", self.workers)
        return self


class OpenAITarget(ApiTargetBase):
    provider: Literal["openai"]
    model: str
    base_url: str | None = Field(
        default=None, validation_alias=AliasChoices("base_url", "endpoint")
    )
    """A proxy or gateway in front of OpenAI (AgentV writes `endpoint`)."""
    api: Literal["chat", "responses"] = "chat"
    organization: str | None = None
    KEY_ENV: ClassVar[str | None] = "OPENAI_API_KEY"


class OpenAICompatibleTarget(ApiTargetBase):
    """Any server speaking the OpenAI API: vLLM, Ollama, llama.cpp, LM Studio."""

    provider: Literal["openai-compatible"]
    model: str
    base_url: str
    api: Literal["chat", "responses"] = "chat"


class AzureTarget(ApiTargetBase):
    provider: Literal["azure", "azure-openai"]
    endpoint: str = Field(validation_alias=AliasChoices("endpoint", "resource"))
    """The resource's address (`resource`: AgentV's older name)."""
    deployment: str | None = None
    """The Azure deployment; `model` is accepted in its place, as AgentV files write it."""
    api_version: str = Field(default="2024-10-01-preview", alias="version")
    api: Literal["chat", "responses"] = "chat"
    KEY_ENV: ClassVar[str | None] = "AZURE_OPENAI_API_KEY"

    @model_validator(mode="after")
    def _deployment_or_model(self) -> AzureTarget:
        if not (self.deployment or self.model):
            raise ValueError("an azure target needs deployment (the Azure deployment name)")
        return self

    def deployment_name(self) -> str:
        return self.deployment or self.model or ""


class AnthropicTarget(ApiTargetBase):
    provider: Literal["anthropic"]
    model: str
    max_output_tokens: PositiveInt = Field(default=4096, alias="max_tokens")
    KEY_ENV: ClassVar[str | None] = "ANTHROPIC_API_KEY"


class GeminiTarget(ApiTargetBase):
    provider: Literal["gemini", "google", "google-gemini"]
    model: str = "gemini-2.5-flash"
    KEY_ENV: ClassVar[str | None] = "GEMINI_API_KEY"


FailureKind = Literal[
    "model_failure", "infra_error", "rate_limited", "quota_exhausted", "timeout", "invalid_input"
]


class MockToolCall(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    name: str = Field(validation_alias=AliasChoices("name", "tool"))
    arguments: dict[str, Any] = Field(
        default_factory=dict, validation_alias=AliasChoices("arguments", "input", "args")
    )
    output: Any = None
    """What the tool returned, for `tool_trajectory` entries that check `output`."""


class MockUsage(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    input_tokens: NonNegativeInt = 0
    output_tokens: NonNegativeInt = 0


class MockJudgeRule(BaseModel):
    """A score for answers that contain a text or match a pattern."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    contains: str | None = None
    matches: str | None = None
    """A regular expression, as the `regex` evaluator reads it (searched, not anchored)."""
    score: float = Field(ge=0.0, le=1.0)

    @model_validator(mode="after")
    def _one_test(self) -> MockJudgeRule:
        if (self.contains is None) == (self.matches is None):
            raise ValueError("a mock judge rule needs exactly one of `contains` or `matches`")
        if self.matches is not None:
            try:
                compile_regex(self.matches, None)
            except regex.error as exc:
                raise ValueError(f"`matches` is not a valid regular expression ({exc})") from None
        return self


class MockJudge(BaseModel):
    """What a mock judge replies: the first rule that fits the candidate answer gives the
    score, else `score`; rubric items are all met at 0.5 or more, none below."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    score: float = Field(default=1.0, ge=0.0, le=1.0)
    rules: list[MockJudgeRule] = Field(default_factory=list)


class MockTarget(TargetBase):
    """A provider that answers without a network: for quick starts, tests and benchmarks."""

    provider: Literal["mock"]
    response: str = "Mock response"
    echo: bool = False
    """Answer with the last user message."""
    responses: dict[str, str] = Field(default_factory=dict)
    """Answers by case id; cases not listed get `response` (or the echo)."""
    latency_ms: NonNegativeFloat = 0
    failure_rate: float = Field(default=0.0, ge=0.0, le=1.0)
    failure_kind: FailureKind = "infra_error"
    judge: bool | MockJudge = False
    """Answer as a judge: `true` finds everything right (a verdict of 1.0, every rubric
    met); `{score, rules}` scores answers by what they contain, so a dry run shows what a
    judge would see."""
    tool_calls: list[MockToolCall] = Field(default_factory=list)
    """Tool calls the run reports, for trying `tool_trajectory` and the like."""
    usage: MockUsage | None = None
    cost_usd: NonNegativeFloat | None = None


class OracleTarget(TargetBase):
    """Harbor's `oracle` agent, for container tasks only: copies the task's `solution/` to
    /solution in the trial's container and runs `solve.sh` there; a task it does not
    solve is a broken task."""

    provider: Literal["oracle"]


class NopTarget(TargetBase):
    """Harbor's `nop` agent, for container tasks only: does nothing, so the verifier
    grades the environment as it was built (a task it passes tests nothing)."""

    provider: Literal["nop"]


class VSCodeTarget(TargetBase):
    """VS Code's Copilot chat, driven through a pool of workspace folders (subagent's layout)."""

    provider: Literal["vscode", "vscode-insiders"]
    executable: str | None = Field(default=None, alias="vscode_cmd")
    """Default: `code`, or `code-insiders` for the insiders kind."""
    subagent_root: str | None = None
    """Default: `~/.subagent/vscode-agents` (`vscode-insiders-agents` for Insiders)."""
    workspace_template: str | None = None
    """A folder whose files replace the built-in `workspace_templates/vscode/` ones."""
    mode: str = "evalrelay"
    """The chat mode (custom agent) the task runs in; the template provides `evalrelay`."""
    ready_timeout_seconds: PositiveFloat = 60.0
    """How long a newly opened window may take to answer the wake-up chat."""
    focus_delay_seconds: NonNegativeFloat = 0.5
    """Pause between focusing a window and chatting, so the chat lands in that window."""
    wait: bool = True
    """Accepted from AgentV files; evalrelay always waits for the answer."""

    def default_executable(self) -> str:
        return "code-insiders" if self.provider == "vscode-insiders" else "code"


class CodexTarget(AgentTargetBase):
    """OpenAI's Codex CLI, run as `codex exec --json` in a fresh workspace per attempt."""

    provider: Literal["codex", "codex-cli"]
    executable: str = "codex"
    args: list[str] = Field(default_factory=list)
    """More `codex exec` options, placed before the prompt."""
    model: str | None = None
    profile: str | None = None
    sandbox: Literal["read-only", "workspace-write", "danger-full-access"] | None = None
    config: dict[str, Any] = Field(default_factory=dict)
    """`-c key=value` overrides passed to Codex; values are written as TOML."""
    env: dict[str, str] = Field(default_factory=dict)
    """More environment variables for Codex (keys as `${VAR}` references)."""
    workspace_template: str | None = None
    system_prompt: str | None = None
    cwd: str | None = None
    """Where the agent runs, relative to its fresh workspace (default: the workspace)."""
    log_dir: str | None = None
    """A folder on the worker keeping each attempt's agent log after the workspace goes."""
    log_format: Literal["summary", "json"] = "summary"
    """`json`: the agent's raw event stream; `summary`: the transcript the result keeps."""


class CopilotCliTarget(AgentTargetBase):
    """GitHub Copilot CLI, run as `copilot -p … --output-format json` in a fresh workspace."""

    provider: Literal["copilot-cli", "copilot"]
    executable: str = "copilot"
    model: str | None = None
    allowed_tools: list[str] | None = None
    """Tools it may use without asking (`--allow-tool`); default: all of them."""
    denied_tools: list[str] = Field(default_factory=list)
    args: list[str] = Field(default_factory=list)
    env: dict[str, str] = Field(default_factory=dict)
    """Environment for Copilot, e.g. COPILOT_OFFLINE and COPILOT_PROVIDER_BASE_URL for
    a model server of your own; keys as `${VAR}` references."""
    workspace_template: str | None = None
    cwd: str | None = None
    """Where the agent runs, relative to its fresh workspace (default: the workspace)."""
    log_dir: str | None = None
    """A folder on the worker keeping each attempt's agent log after the workspace goes."""
    log_format: Literal["summary", "json"] = "summary"
    """`json`: the agent's raw event stream; `summary`: the transcript the result keeps."""


ClaudePermissionMode = Literal[
    "acceptEdits", "auto", "bypassPermissions", "default", "dontAsk", "manual", "plan"
]
"""Claude Code's `--permission-mode` choices (`default` is older versions' name for `manual`)."""


class ClaudeCodeTarget(AgentTargetBase):
    """Anthropic's Claude Code CLI, run as `claude -p --output-format stream-json` in a fresh
    workspace; the keys are AgentV's for its `claude-code` targets."""

    provider: Literal["claude-code"]
    executable: str = Field(
        default="claude", validation_alias=AliasChoices("executable", "command", "binary")
    )
    """The `claude` to run; several words (`node /opt/claude/cli.js`) are split like a shell
    would, as AgentV does."""
    args: list[str] = Field(
        default_factory=list, validation_alias=AliasChoices("args", "arguments")
    )
    """More `claude` options, placed after evalrelay's own."""
    model: str | None = None
    permission_mode: ClaudePermissionMode | None = None
    """Default: Claude Code's own, which lets it read and run read-only commands, and
    denies what would change files (the result lists each denial)."""
    allowed_tools: list[str] = Field(default_factory=list)
    """Tools it may use without asking (`--allowedTools`), e.g. `Bash(git diff:*)`, `Edit`."""
    denied_tools: list[str] = Field(default_factory=list)
    """Tools it may not use (`--disallowedTools`)."""
    max_turns: PositiveInt | None = None
    max_budget_usd: PositiveFloat | None = None
    env: dict[str, str] = Field(default_factory=dict)
    """More environment for Claude Code (keys as `${VAR}` references). The worker's own
    ANTHROPIC_API_KEY and ANTHROPIC_BASE_URL reach it as they are."""
    workspace_template: str | None = None
    system_prompt: str | None = None
    """Added to Claude Code's own system prompt (`--append-system-prompt`)."""
    cwd: str | None = None
    """Where the agent runs, relative to its fresh workspace (default: the workspace)."""
    verbose: bool = False
    """Log each command line the worker runs for this target."""
    keep_temp_files: bool = False
    """AgentV's option to keep the agent's files; evalrelay keeps every workspace anyway."""
    log_dir: str | None = Field(
        default=None, validation_alias=AliasChoices("log_dir", "log_directory")
    )
    """A folder on the worker keeping each attempt's agent log after the workspace goes."""
    log_format: Literal["summary", "json"] = Field(
        default="summary", validation_alias=AliasChoices("log_format", "log_output_format")
    )
    """`json`: the agent's raw event stream; `summary`: the transcript the result keeps."""


class CliHealthcheck(BaseModel):
    """A check a `cli` target must pass before its first job on a worker: an HTTP GET
    that answers 2xx, or a command that exits 0."""

    model_config = ConfigDict(extra="forbid", frozen=True, populate_by_name=True)

    type: Literal["http", "command"] | None = None
    url: str | None = None
    command: str | list[str] | None = Field(default=None, alias="command_template")
    cwd: str | None = None
    timeout_seconds: PositiveFloat = 10.0

    @model_validator(mode="after")
    def _one_kind(self) -> CliHealthcheck:
        if (self.url is None) == (self.command is None):
            raise ValueError("a healthcheck needs either url (http) or command_template")
        return self


class CliTarget(AgentTargetBase):
    """Any command-line agent: a command template run without a shell."""

    provider: Literal["cli"]
    command: Annotated[str | list[str], AfterValidator(check_no_placeholder_in_scripts)] = Field(
        alias="command_template"
    )
    """Placeholders: {task_file}, {output_file}, {workspace}, {files}, {prompt} (AgentV's
    upper-case {PROMPT_FILE}, {OUTPUT_FILE}, {FILES}, {PROMPT} too), each filled into its
    own argument; none may sit inside a script a shell or interpreter runs (`sh -c`)."""
    env: dict[str, str] = Field(default_factory=dict)
    workspace_template: str | None = None
    files_format: str = Field(default="{path}", alias="attachments_format")
    """How each attached file is written in {files}: {path} (absolute) or {name}; AgentV's
    `--file {path}` gives two arguments per file."""
    healthcheck: CliHealthcheck | None = None
    verbose: bool = Field(default=False, alias="cli_verbose")
    """Log each command line the worker runs for this target."""
    keep_temp_files: bool = Field(default=False, alias="keep_output_files")
    """AgentV's option to keep the answer files; evalrelay keeps every workspace anyway."""
    cwd: str | None = None
    """Where the agent runs, relative to its fresh workspace (default: the workspace)."""
    log_dir: str | None = None
    """A folder on the worker keeping each attempt's agent log after the workspace goes."""
    log_format: Literal["summary", "json"] = "summary"
    """`json`: the agent's raw event stream; `summary`: the transcript the result keeps."""


TargetSettings = Annotated[
    OpenAITarget
    | OpenAICompatibleTarget
    | AzureTarget
    | AnthropicTarget
    | GeminiTarget
    | MockTarget
    | OracleTarget
    | NopTarget
    | VSCodeTarget
    | CodexTarget
    | CopilotCliTarget
    | ClaudeCodeTarget
    | CliTarget,
    Field(discriminator="provider"),
]

ApiTargetSettings = (
    OpenAITarget | OpenAICompatibleTarget | AzureTarget | AnthropicTarget | GeminiTarget
)

TASK_QUEUE = "task"
"""The queue of container tasks (Harbor's format): one trial, one container."""

API_KINDS = frozenset(
    {
        "openai",
        "openai-compatible",
        "azure",
        "azure-openai",
        "anthropic",
        "gemini",
        "google",
        "google-gemini",
        "mock",
    }
)

QUEUE_FOR_KIND = {
    **{kind: "api" for kind in API_KINDS},
    "vscode": "agent.vscode",
    "vscode-insiders": "agent.vscode",
    "codex": "agent.codex",
    "codex-cli": "agent.codex",
    "copilot-cli": "agent.cli",
    "copilot": "agent.cli",
    "claude-code": "agent.cli",
    "cli": "agent.cli",
    "oracle": TASK_QUEUE,
    "nop": TASK_QUEUE,
}
"""Which Celery queue runs jobs of each provider kind. A container task's job goes to
`task` whatever its agent (`bridge.planning.jobs.build_job`)."""

TASK_AGENT_KINDS = frozenset({"oracle", "nop", "codex", "codex-cli"})
"""The kinds that can be a container task's agent: Harbor's two built-ins, and the
agent CLIs that run inside the task's container."""

API_KEY_TARGETS = (OpenAITarget, AzureTarget, AnthropicTarget, GeminiTarget)
"""The API providers that read a key from a variable when a target names none: theirs are
`DEFAULT_KEY_VARIABLES`."""

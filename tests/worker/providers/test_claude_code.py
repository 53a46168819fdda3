"""The Claude Code provider driving the real `claude` CLI against aimock's Anthropic
Messages endpoint on loopback. The key is the worker's ANTHROPIC_API_KEY, never the
target's; the base URL comes from the target's `env` or from the worker's environment."""

from __future__ import annotations

import socketserver
import threading
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import redis

from evalrelay.bridge.results.result import Result, Status
from evalrelay.bridge.targets.settings import ClaudeCodeTarget
from evalrelay.worker.agents.workspace import AttemptWorkspace
from evalrelay.worker.execute import execute
from evalrelay.worker.providers.claude_code import ClaudeCodeProvider
from tests.conftest import Processes, WriteFiles, running_with
from tests.worker.providers import real_agents
from tests.worker.providers.agent_cases import (
    ATTACHED,
    ATTACHED_TEXT,
    agent_project,
    planned_job,
)
from tests.worker.providers.real_agents import (
    AIMOCK_KEY,
    SERVER_ERROR,
    aimock,
    reading_round_trip,
    run_against_aimock,
)
from tests.worker.test_tasks import collect_all, submit_campaign


def claude_targets(url: str, *settings: str) -> str:
    """A `claude-code` target on aimock (`url` ends in /v1; Anthropic's base URL does not)."""
    bin_dir = real_agents.agents_bin()
    extra = "".join(f"    {line}\n" for line in settings)
    return f"""\
targets:
  - name: claude
    provider: claude-code
    executable: {bin_dir / "claude"}
    model: claude-sonnet-4
    env: {{ANTHROPIC_BASE_URL: "{url.removesuffix("/v1")}", CLAUDE_CODE_MAX_RETRIES: "0"}}
{extra}"""


@pytest.fixture(autouse=True)
def worker_key(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """The worker's own Anthropic key, and an empty usual config dir to seed job homes from."""
    monkeypatch.setenv("ANTHROPIC_API_KEY", AIMOCK_KEY)
    monkeypatch.delenv("ANTHROPIC_AUTH_TOKEN", raising=False)
    monkeypatch.setenv("CLAUDE_CONFIG_DIR", str(tmp_path / "usual-claude"))


def run_claude(
    project: WriteFiles,
    tmp_path: Path,
    client: redis.Redis,
    fixtures: list[dict[str, Any]],
    question: str,
    *settings: str,
    timeout: float | None = None,
) -> Result:
    return run_against_aimock(
        project,
        tmp_path,
        client,
        lambda url: claude_targets(url, *settings),
        "claude",
        fixtures,
        question,
        timeout,
    )


def test_the_command_line_follows_the_settings(tmp_path: Path) -> None:
    """AgentV's flags, then evalrelay's settings, then `args`; the task goes to stdin."""
    settings = ClaudeCodeTarget.model_validate(
        {
            "name": "c",
            "provider": "claude-code",
            "command": "node /opt/claude/cli.js",
            "model": "sonnet",
            "permission_mode": "acceptEdits",
            "allowed_tools": ["Bash(git diff:*)", "Edit"],
            "denied_tools": ["WebFetch"],
            "max_turns": 5,
            "max_budget_usd": 0.5,
            "arguments": ["--effort", "low"],
        }
    )
    (tmp_path / "task.md").write_text("The task.")
    provider = ClaudeCodeProvider(settings)
    assert provider._setting("executable") == "node"
    argv, stdin = provider.command("/usr/bin/node", AttemptWorkspace(tmp_path, "r"), [])
    assert stdin == "The task."
    assert argv == [
        *["/usr/bin/node", "/opt/claude/cli.js", "-p", "--output-format", "stream-json"],
        *["--verbose", "--model", "sonnet", "--permission-mode", "acceptEdits"],
        *["--max-turns", "5", "--max-budget-usd", "0.5"],
        *["--allowedTools", "Bash(git diff:*)", "--allowedTools", "Edit"],
        *["--disallowedTools", "WebFetch", "--effort", "low"],
    ]


def test_plain_answer_with_usage_and_transcript(
    project: WriteFiles, tmp_path: Path, client: redis.Redis
) -> None:
    fixtures = [{"match": {}, "response": {"content": "Four spaces it is."}}]
    result = run_claude(project, tmp_path, client, fixtures, "Indent?")

    assert result.status is Status.OK, result.error
    assert result.answer == "Four spaces it is."
    assert result.usage is not None and result.usage.output_tokens is not None
    assert result.artifacts["model"] == "claude-sonnet-4"
    record = result.artifacts["claude"]
    types = [event["type"] for event in record["transcript"]]
    assert types[0] == "system" and types[-1] == "result"
    assert record["command"][1:5] == ["-p", "--output-format", "stream-json", "--verbose"]
    assert record["result"]["num_turns"] == 1 and record["result"]["permission_denials"] == []
    assert {"CLAUDE.md", "task.md", "transcript.jsonl", f"inputs/{ATTACHED}"} <= set(
        record["files"]
    )
    task = (Path(record["workspace"]) / "task.md").read_text()
    assert task.index(f"`inputs/{ATTACHED}`") < task.index("[[ ## task ## ]]")
    assert AIMOCK_KEY not in result.model_dump_json()


MULTI_TURN = """\
evalcases:
  - id: runtime
    input_messages:
      - {role: system, content: "Be terse."}
      - {role: user, content: "Which version should I target?"}
      - {role: assistant, content: "Which runtime?"}
      - {role: user, content: "Node 22"}
"""


def test_a_multi_turn_case_reaches_claude_as_one_ordered_transcript_with_the_system_prompt(
    project: WriteFiles, tmp_path: Path, client: redis.Redis
) -> None:
    """The conversation is the task's `[Role]:` transcript; the target's `system_prompt` is
    added to Claude Code's own system prompt."""
    transcript = "[System]: Be terse.\n[User]: Which version should I target?\n"
    transcript += "[Assistant]: Which runtime?\n[User]: Node 22"
    both = {"userMessage": transcript, "systemMessage": "Reply in French."}
    fixtures = [
        {"match": both, "response": {"content": "Transcript and system prompt arrived."}},
        {"match": {"userMessage": transcript}, "response": {"content": "Transcript only."}},
        {"match": {}, "response": {"content": "Neither."}},
    ]
    with aimock(real_agents.agents_bin(), fixtures, tmp_path) as url:
        targets = claude_targets(url, "system_prompt: Reply in French.")
        root = project({"targets.yaml": targets, "evals.yaml": MULTI_TURN})
        result = execute(planned_job(root, client, "claude"), "w", client)

    assert result.status is Status.OK, result.error
    assert result.answer == "Transcript and system prompt arrived."
    command = result.artifacts["claude"]["command"]
    assert command[command.index("--append-system-prompt") + 1] == "Reply in French."


def test_tool_round_trip_reads_the_attachment_in_the_workspace(
    project: WriteFiles, tmp_path: Path, client: redis.Redis
) -> None:
    command = {"command": f"cat 'inputs/{ATTACHED}'", "description": "read the module"}
    fixtures = reading_round_trip("Bash", command)
    result = run_claude(project, tmp_path, client, fixtures, "Read the module")

    assert result.status is Status.OK, result.error
    assert result.answer == "The module prints a greeting."
    events = result.artifacts["claude"]["transcript"]
    (tool_use,) = [
        block
        for e in events
        if e["type"] == "assistant"
        for block in e["message"]["content"]
        if block["type"] == "tool_use"
    ]
    (tool_result,) = [
        block
        for e in events
        if e["type"] == "user"
        for block in e["message"]["content"]
        if block["type"] == "tool_result"
    ]
    assert tool_use["name"] == "Bash" and tool_result["tool_use_id"] == tool_use["id"]
    assert ATTACHED_TEXT in str(tool_result["content"]) and not tool_result["is_error"]


def test_writing_needs_a_permission_mode_and_each_denial_is_kept(
    project: WriteFiles, tmp_path: Path, client: redis.Redis
) -> None:
    """Claude Code's default mode denies a command that changes files; `acceptEdits` lets it
    change the workspace."""
    write = {"toolCalls": [{"name": "Bash", "arguments": {"command": "echo done > made.txt"}}]}
    fixtures: list[dict[str, Any]] = [
        {"match": {"hasToolResult": True}, "response": {"content": "Tried."}},
        {"match": {}, "response": write},
    ]
    denied = run_claude(project, tmp_path, client, fixtures, "Write")
    (denial,) = denied.artifacts["claude"]["result"]["permission_denials"]
    assert denied.status is Status.OK and denial["tool_name"] == "Bash"
    assert not (Path(denied.artifacts["claude"]["workspace"]) / "made.txt").exists()
    assert denied.trajectory is not None
    (step,) = denied.trajectory.steps
    assert (step.tool, step.kind, step.ok) == ("Bash", "command", False)
    assert denied.workspace_changes is not None and denied.workspace_changes.files == []

    allowed = run_claude(
        project, tmp_path, client, fixtures, "Write", "permission_mode: acceptEdits"
    )
    assert allowed.artifacts["claude"]["result"]["permission_denials"] == []
    made = Path(allowed.artifacts["claude"]["workspace"]) / "made.txt"
    assert made.read_text() == "done\n"
    assert allowed.workspace_changes is not None
    assert allowed.workspace_changes.diff == "--- /dev/null\n+++ b/made.txt\n@@ -0,0 +1 @@\n+done\n"


def test_stopping_at_max_turns_is_the_models_failure(
    project: WriteFiles, tmp_path: Path, client: redis.Redis
) -> None:
    looping = {"toolCalls": [{"name": "Bash", "arguments": {"command": "ls"}}]}
    fixtures = [{"match": {}, "response": looping}]
    result = run_claude(project, tmp_path, client, fixtures, "Loop", "max_turns: 1")

    assert result.status is Status.MODEL_FAILURE
    assert result.error is not None and result.error.message == "stopped at its max_turns (1)"
    assert "--max-turns" in result.artifacts["claude"]["command"]


def test_agent_that_never_finishes_is_stopped_with_every_process(
    project: WriteFiles, tmp_path: Path, client: redis.Redis
) -> None:
    marker = f"evalrelay-orphan-{uuid.uuid4().hex}"
    command = f"python3 -c 'import time; time.sleep(600)' {marker}"
    sleeper = {"toolCalls": [{"name": "Bash", "arguments": {"command": command}}]}
    fixtures = [{"match": {}, "response": sleeper}]  # every turn asks for another sleeper
    started = time.monotonic()
    result = run_claude(
        project, tmp_path, client, fixtures, "Loop", "allowed_tools: [Bash]", timeout=6
    )

    assert result.status is Status.TIMEOUT
    assert result.error is not None and "stopped with all its processes" in result.error.message
    assert time.monotonic() - started < 20
    assert any(e["type"] == "assistant" for e in result.artifacts["claude"]["transcript"])
    assert running_with(marker) == []
    # The trajectory until it was stopped: the command asked for, which never succeeded.
    assert result.trajectory is not None
    last = result.trajectory.steps[-1]
    assert last.tool == "Bash" and last.ok is not True
    assert marker in last.arguments["command"]


def test_server_error_is_an_infra_error_with_the_agents_message(
    project: WriteFiles, tmp_path: Path, client: redis.Redis
) -> None:
    result = run_claude(project, tmp_path, client, SERVER_ERROR, "Anything")

    assert result.status is Status.INFRA_ERROR
    assert result.error is not None
    assert result.error.message.startswith("Claude Code got HTTP 500: API Error: 500 boom")
    assert result.artifacts["claude"]["exit_code"] == 1
    assert AIMOCK_KEY not in result.model_dump_json()


class _Trap(socketserver.ThreadingTCPServer):
    daemon_threads = True
    allow_reuse_address = True

    def __init__(self) -> None:
        self.requests: list[str] = []
        trap = self

        class Handler(socketserver.StreamRequestHandler):
            def handle(self) -> None:
                trap.requests.append(self.rfile.readline().decode(errors="replace").strip())
                self.wfile.write(b"HTTP/1.1 403 Forbidden\r\nContent-Length: 0\r\n\r\n")

        super().__init__(("127.0.0.1", 0), Handler)


@pytest.fixture
def proxy_trap(monkeypatch: pytest.MonkeyPatch) -> Iterator[_Trap]:
    """Every request the agent makes to anything but loopback goes to this proxy, which
    records it and refuses it."""
    trap = _Trap()
    threading.Thread(target=trap.serve_forever, daemon=True).start()
    address = f"http://127.0.0.1:{trap.server_address[1]}"
    for name in ("HTTPS_PROXY", "HTTP_PROXY", "https_proxy", "http_proxy"):
        monkeypatch.setenv(name, address)
    monkeypatch.setenv("NO_PROXY", "127.0.0.1,localhost")
    monkeypatch.setenv("no_proxy", "127.0.0.1,localhost")
    try:
        yield trap
    finally:
        trap.shutdown()
        trap.server_close()


def test_the_model_server_is_all_it_talks_to(
    project: WriteFiles,
    tmp_path: Path,
    client: redis.Redis,
    proxy_trap: _Trap,
    private_home: Path,
) -> None:
    """Without the provider's switches, this CLI sends telemetry to api.anthropic.com."""
    fixtures = [{"match": {}, "response": {"content": "Quiet."}}]
    result = run_claude(project, tmp_path, client, fixtures, "Anyone listening?")

    assert result.status is Status.OK, result.error
    assert proxy_trap.requests == []
    home = Path(result.artifacts["claude"]["home"])
    assert home.is_relative_to(private_home) and not (home / "telemetry").exists()


def test_claude_jobs_run_on_an_agent_cli_worker_with_its_own_key_and_base_url(
    project: WriteFiles,
    tmp_path: Path,
    client: redis.Redis,
    redis_url: str,
    processes: Processes,
    agents_bin: Path,
) -> None:
    """The target names neither key nor server: both are the worker's environment."""
    fixtures = [{"match": {}, "response": {"content": "Done by a worker."}}]
    targets = f"""\
targets:
  - name: claude
    provider: claude-code
    executable: {agents_bin / "claude"}
"""
    with aimock(agents_bin, fixtures, tmp_path) as url:
        root = agent_project(project, targets, "Work", count=2)
        worker_env = {
            "ANTHROPIC_API_KEY": AIMOCK_KEY,
            "ANTHROPIC_BASE_URL": url.removesuffix("/v1"),
        }
        processes.worker(client, "claude@test", "-Q", "agent.cli", "-c", "2", extra_env=worker_env)
        info = submit_campaign(redis_url, root, 2, target="claude")
        lines = collect_all(processes, client, info, 120)

    assert [line["status"] for line in lines] == ["ok"] * 2
    assert {line["answer"] for line in lines} == {"Done by a worker."}
    assert AIMOCK_KEY not in str(lines)
    homes = {line["artifacts"]["claude"]["home"] for line in lines}  # type: ignore[index]
    assert all(Path(home).name.endswith(("-1", "-2")) for home in homes)

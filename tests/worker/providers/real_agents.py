"""The real Codex CLI, Copilot CLI, Claude Code and aimock from the npm registry, for the
agent tests.

They are installed once into a cache folder (`EVALRELAY_AGENT_CACHE`, default
`~/.cache/evalrelay-test-agents`), at the versions pinned here; `.ci/run` installs them
the same way. aimock serves the OpenAI Responses and Chat Completions APIs and
Anthropic's Messages API on loopback with scripted replies (fixtures), so the agents run
offline.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import redis

from evalrelay.bridge.results.result import Result
from evalrelay.worker.execute import execute
from tests.conftest import WriteFiles, free_port, loopback_server
from tests.worker.providers.agent_cases import ATTACHED_TEXT, agent_project, planned_job

PACKAGES = {
    "@openai/codex": "0.169.0",
    "@github/copilot": "1.0.102",
    "@anthropic-ai/claude-code": "2.1.328",
    "@copilotkit/aimock": "1.43.0",
}


def agents_bin() -> Path:
    """The folder holding `codex`, `copilot`, `claude` and `llmock`, installing them when
    missing."""
    cache = Path(
        os.environ.get("EVALRELAY_AGENT_CACHE") or Path.home() / ".cache" / "evalrelay-test-agents"
    )
    bin_dir = cache / "node_modules" / ".bin"
    if all((bin_dir / name).exists() for name in ("codex", "copilot", "claude", "llmock")):
        return bin_dir
    npm = shutil.which("npm")
    if npm is None:
        raise RuntimeError("the agent tests need npm (Node.js 20+) to install the agents")
    cache.mkdir(parents=True, exist_ok=True)
    specs = [f"{name}@{version}" for name, version in PACKAGES.items()]
    subprocess.run(
        [npm, "install", "--prefix", str(cache), "--no-audit", "--no-fund", *specs],
        check=True,
        stdout=subprocess.DEVNULL,
    )
    return bin_dir


@contextmanager
def aimock(bin_dir: Path, fixtures: list[dict[str, Any]], folder: Path) -> Iterator[str]:
    """An aimock server on a free loopback port; yields its base URL (with `/v1`)."""
    path = folder / "fixtures.json"
    path.write_text(json.dumps({"fixtures": fixtures}))
    port = free_port()
    argv = [str(bin_dir / "llmock"), "-p", str(port), "-h", "127.0.0.1", "-f", str(path)]
    url = f"http://127.0.0.1:{port}"
    with loopback_server(argv, f"{url}/health", folder / "aimock.log", seconds=20):
        yield f"{url}/v1"


SERVER_ERROR = [{"match": {}, "response": {"error": {"message": "boom"}, "status": 500}}]
"""aimock fixtures: every request answered with HTTP 500."""


def reading_round_trip(tool: str, arguments: dict[str, str]) -> list[dict[str, Any]]:
    """aimock fixtures: "Read the module" makes the agent call `tool`; the final answer says
    whether the tool's output held the attached module's text."""
    return [
        {
            "match": {"userMessage": "Read the module", "toolResultContains": ATTACHED_TEXT},
            "response": {"content": "The module prints a greeting."},
        },
        {"match": {"hasToolResult": True}, "response": {"content": "I could not read it."}},
        {
            "match": {"userMessage": "Read the module"},
            "response": {"toolCalls": [{"name": tool, "arguments": arguments}]},
        },
    ]


AIMOCK_KEY = "test-key-not-secret"
"""The key the agents send to aimock, from the worker's environment as `${AIMOCK_KEY}`."""


def run_against_aimock(
    project: WriteFiles,
    tmp_path: Path,
    client: redis.Redis,
    targets_yaml: Callable[[str], str],
    target: str,
    fixtures: list[dict[str, Any]],
    question: str,
    timeout: float | None = None,
) -> Result:
    """One case, with attachments, through the real agent named by `target` (its settings
    name the key as `${AIMOCK_KEY}`: the `aimock_key` fixture sets it)."""
    with aimock(agents_bin(), fixtures, tmp_path) as url:
        root = agent_project(project, targets_yaml(url), question, timeout)
        return execute(planned_job(root, client, target), "w", client)

"""What every command-line agent shares, with the real CLIs against aimock: under
`runtime: sandbox`, in a Docker container and under bubblewrap, each still reads its
workspace, runs commands in it and reaches its model server, declared in
`isolation.network`, and nothing else."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from urllib.parse import urlsplit

import pytest
import redis

from evalrelay.bridge.results.result import Status
from tests.conftest import WriteFiles
from tests.worker.providers.agent_cases import ATTACHED
from tests.worker.providers.real_agents import reading_round_trip, run_against_aimock
from tests.worker.providers.test_claude_code import claude_targets
from tests.worker.providers.test_codex import codex_targets
from tests.worker.providers.test_copilot_cli import copilot_targets

AGENTS: dict[str, tuple[Callable[[str], str], str, dict[str, str]]] = {
    "codex": (codex_targets, "exec_command", {"cmd": f"cat 'inputs/{ATTACHED}'"}),
    "claude": (claude_targets, "Bash", {"command": f"cat 'inputs/{ATTACHED}'"}),
    "copilot": (copilot_targets, "bash", {"command": f"cat 'inputs/{ATTACHED}'"}),
}


CASES = [
    ("claude", "bubblewrap"),
    ("claude", "docker"),
    ("codex", "bubblewrap"),
    ("codex", "docker"),
    ("copilot", "bubblewrap"),
]
"""Each agent under each engine; Copilot CLI needs Node.js 22, which the Debian 12 sandbox
image does not carry (worker/agents/sandbox.Dockerfile)."""


def sandboxed(targets: Callable[[str], str], isolation: str, *more: str) -> Callable[[str], str]:
    def written(url: str) -> str:
        endpoint = urlsplit(url).netloc
        lines = ["runtime: sandbox", f"isolation: {{network: ['{endpoint}'], {isolation}}}", *more]
        return targets(url) + "".join(f"    {line}\n" for line in lines)

    return written


@pytest.mark.usefixtures("aimock_key")
@pytest.mark.parametrize(("agent", "engine"), CASES)
def test_real_agent_in_the_sandbox_reads_its_workspace_through_a_tool(
    project: WriteFiles,
    tmp_path: Path,
    client: redis.Redis,
    monkeypatch: pytest.MonkeyPatch,
    request: pytest.FixtureRequest,
    agent: str,
    engine: str,
) -> None:
    if agent == "claude":  # its key comes from the worker, as in its own tests
        monkeypatch.setenv("ANTHROPIC_API_KEY", "aimock-key")
        monkeypatch.setenv("CLAUDE_CONFIG_DIR", str(tmp_path / "usual-claude"))
    targets, tool, arguments = AGENTS[agent]
    fixtures = reading_round_trip(tool, arguments)
    isolation, more = f"engine: {engine}", []
    if engine == "docker":
        isolation += f", image: '{request.getfixturevalue('sandbox_image')}'"
    if (agent, engine) == ("codex", "docker"):
        # Codex's own sandbox makes namespaces, which Docker's seccomp profile refuses
        # inside a container: the container is its sandbox.
        more.append("sandbox: danger-full-access")
    written = sandboxed(targets, isolation, *more)
    result = run_against_aimock(
        project, tmp_path, client, written, agent, fixtures, "Read the module"
    )
    assert result.status is Status.OK, result.error
    assert result.answer == "The module prints a greeting."

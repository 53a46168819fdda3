"""`evalrelay provision` and `evalrelay unlock` on a target's VS Code workspace pool."""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner, Result

from evalrelay.bridge.cli.main import cli
from evalrelay.bridge.cli.worker import default_concurrency
from evalrelay.worker.agents.templates import WorkspaceTemplate
from evalrelay.worker.agents.vscode_pool import WorkspacePool, default_root
from tests.conftest import WriteFiles


def invoke(root: Path, *args: str) -> Result:
    return CliRunner().invoke(cli, [*args, "--project", str(root)])


def pool_project(project: WriteFiles, tmp_path: Path) -> Path:
    return project(
        {
            "targets.yaml": (
                "targets:\n"
                f"  - {{name: copilot, provider: vscode, subagent_root: '{tmp_path}/pool'}}\n"
                "  - {name: gpt, provider: openai, model: gpt-4o}\n"
            )
        }
    )


def test_provision_creates_the_pool_and_shows_it(project: WriteFiles, tmp_path: Path) -> None:
    root = pool_project(project, tmp_path)
    result = invoke(root, "provision", "--target", "copilot", "--count", "3")
    assert result.exit_code == 0, result.output
    assert "created: subagent-1, subagent-2, subagent-3" in result.output
    assert f"3 workspaces in {tmp_path / 'pool'}" in result.output
    assert [w.name for w in WorkspacePool(tmp_path / "pool").workspaces()] == [
        "subagent-1",
        "subagent-2",
        "subagent-3",
    ]


def test_unlock_frees_a_held_workspace(project: WriteFiles, tmp_path: Path) -> None:
    root = pool_project(project, tmp_path)
    invoke(root, "provision", "--target", "copilot", "--count", "2")
    claim = WorkspacePool(tmp_path / "pool").claim("job-42", "r")
    assert claim is not None
    listing = invoke(root, "provision", "--target", "copilot", "--count", "2")
    assert "busy, left as they are: subagent-1" in listing.output
    assert "job-42" in listing.output

    result = invoke(root, "unlock", "--target", "copilot", "subagent-1")
    assert result.exit_code == 0, result.output
    assert "unlocked subagent-1, held by job job-42" in result.output
    assert not claim.workspace.locked()


def test_unlock_needs_names_or_all_and_knows_the_pool(project: WriteFiles, tmp_path: Path) -> None:
    root = pool_project(project, tmp_path)
    invoke(root, "provision", "--target", "copilot", "--count", "1")
    assert "or pass --all" in invoke(root, "unlock", "--target", "copilot").output
    unknown = invoke(root, "unlock", "--target", "copilot", "subagent-9")
    assert unknown.exit_code != 0 and "subagent-9 not in" in unknown.output
    assert "nothing was locked" in invoke(root, "unlock", "--target", "copilot", "--all").output


def test_provision_refuses_a_target_that_is_not_vscode(project: WriteFiles, tmp_path: Path) -> None:
    root = pool_project(project, tmp_path)
    result = CliRunner().invoke(
        cli, ["provision", "--target", "gpt", "--count", "1", "--project", str(root)]
    )
    assert result.exit_code != 0
    assert "target 'gpt' has provider openai" in str(result.exception)


def test_vscode_worker_runs_as_many_jobs_as_the_default_pool_holds(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("HOME", str(tmp_path))
    assert default_concurrency("agent.vscode") == 1
    WorkspacePool(default_root("vscode")).provision(3, WorkspaceTemplate.load("vscode"))
    assert default_concurrency("agent.vscode") == 3
    assert (tmp_path / ".subagent" / "vscode-agents" / "subagent-3").is_dir()

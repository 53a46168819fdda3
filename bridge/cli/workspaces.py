"""`evalrelay provision` and `evalrelay unlock`: the VS Code workspace pool of this host."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

import click
import redis
from rich.table import Table

from evalrelay.bridge.cli.terminal import TerminalConsole, echo
from evalrelay.bridge.connection import configured_url, connect
from evalrelay.bridge.errors import TargetError
from evalrelay.bridge.evalfile.project import Project
from evalrelay.bridge.targets.settings import VSCodeTarget
from evalrelay.bridge.targets.targets_file import Targets
from evalrelay.worker.agents.templates import TemplateError, WorkspaceTemplate
from evalrelay.worker.agents.vscode_pool import WorkspacePool, pool_root

target_option = click.option(
    "--target", "-t", required=True, help="A vscode or vscode-insiders target of targets.yaml."
)
project_option = click.option(
    "--project",
    type=click.Path(path_type=Path, exists=True),
    default=Path("."),
    show_default=True,
    help="A folder of the project whose targets.yaml names the target.",
)


@click.command("provision")
@target_option
@click.option("--count", "-n", type=click.IntRange(min=1), required=True, help="Pool size.")
@click.option("--force", is_flag=True, help="Refresh busy workspaces too, taking their locks.")
@project_option
def provision_command(target: str, count: int, force: bool, project: Path) -> None:
    """Make COUNT VS Code workspaces for TARGET (subagent-1 … subagent-COUNT)."""
    settings = vscode_settings(project, target)
    try:
        template = WorkspaceTemplate.load("vscode", settings.workspace_template)
    except TemplateError as exc:
        raise TargetError(f"target '{target}': {exc}") from None
    pool = WorkspacePool(pool_root(settings), cluster_client())
    report = pool.provision(count, template, force=force)
    console = TerminalConsole()
    for label, names in (("created", report.created), ("refreshed", report.refreshed)):
        if names:
            console.print(f"{label}: {', '.join(names)}", soft_wrap=True)
    if report.busy:
        console.print(
            f"busy, left as they are: {', '.join(report.busy)} (--force refreshes them)",
            soft_wrap=True,
        )
    console.print(pool_table(pool))
    console.print(
        f"{report.total} workspaces in {pool.root}; an agent.vscode worker here runs that many "
        f"jobs at once",
        soft_wrap=True,
    )


@click.command("unlock")
@target_option
@click.argument("names", nargs=-1)
@click.option("--all", "everything", is_flag=True, help="Unlock every workspace of the pool.")
@project_option
def unlock_command(target: str, names: tuple[str, ...], everything: bool, project: Path) -> None:
    """Take the locks off workspaces NAMES (subagent-N) of TARGET's pool, or --all."""
    if bool(names) == everything:
        raise click.UsageError("name the workspaces to unlock, or pass --all (not both)")
    pool = WorkspacePool(pool_root(vscode_settings(project, target)), cluster_client())
    unknown = sorted(set(names) - {w.name for w in pool.workspaces()})
    if unknown:
        raise click.BadParameter(f"{', '.join(unknown)} not in {pool.root}", param_hint="NAMES")
    unlocked = pool.unlock(None if everything else list(names))
    for workspace, owner in unlocked:
        held = f"job {owner.job_id} (pid {owner.pid} on {owner.host})" if owner else "another tool"
        echo(f"unlocked {workspace.name}, held by {held}")
    if not unlocked:
        echo("nothing was locked")


def vscode_settings(project: Path, target: str) -> VSCodeTarget:
    settings = Targets.load(Project.containing(project).root, project).get(target).settings()
    if not isinstance(settings, VSCodeTarget):
        raise TargetError(
            f"target '{target}' has provider {settings.provider}; workspace pools are for "
            f"vscode and vscode-insiders targets"
        )
    return settings


def cluster_client() -> redis.Redis | None:
    """The cluster's Redis, to judge and drop workspace leases; None on the embedded default."""
    url = configured_url()
    return connect(url) if url else None


def pool_table(pool: WorkspacePool) -> Table:
    table = Table("workspace", "state", "job", "owner", "since")
    now = datetime.now(UTC)
    for workspace in pool.workspaces():
        owner = workspace.owner()
        if not workspace.locked():
            table.add_row(workspace.name, "free", "", "", "")
        elif owner is None:
            table.add_row(workspace.name, "locked by another tool", "", "", "")
        else:
            state = "stale" if pool.is_stale(workspace, owner) else "busy"
            since = f"{(now - owner.claimed_at).total_seconds():.0f} s"
            who = f"pid {owner.pid} on {owner.host}"
            table.add_row(workspace.name, state, owner.job_id, who, since)
    return table

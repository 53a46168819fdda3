"""The pool of VS Code workspaces on one host, in subagent's layout, and who holds each.

    <root>/subagent-N/subagent-N.code-workspace, subagent.lock, .alive, messages/, inputs/

A claim is a lock file created exclusively (a fully written file linked into place),
holding its owner as JSON, plus a Redis lease renewed by a heartbeat. A lock whose owner
process is gone (same host), or whose lease has run out everywhere, is reclaimed. Claims,
renewals and reclaims on one host pass through one file mutex, so two workers never judge
the same lock at once; the exclusive create still guards against other tools.
"""

from __future__ import annotations

import contextlib
import os
import re
import socket
import threading
import uuid
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path

import redis
import redis.exceptions
from filelock import FileLock
from pydantic import BaseModel, ConfigDict, ValidationError

from evalrelay.bridge.delivery.lease import LEASE_SECONDS, keep_renewed
from evalrelay.bridge.keys import workspace_lease_key
from evalrelay.bridge.targets.settings import VSCodeTarget
from evalrelay.worker.agents.pids import pid_alive
from evalrelay.worker.agents.templates import WorkspaceTemplate

LOCK_FILE = "subagent.lock"
ALIVE_FILE = ".alive"
MESSAGES_FOLDER = "messages"
TEMPLATE_WORKSPACE_FILE = "subagent.code-workspace"
MUTEX_FILE = ".evalrelay-pool.lock"
MUTEX_TIMEOUT_SECONDS = 30.0
_NAME = re.compile(r"subagent-([0-9]+)")
HOST = socket.gethostname()


def pool_root(settings: VSCodeTarget) -> Path:
    """The target's `subagent_root`, else `~/.subagent/vscode-agents` (Insiders: its own)."""
    if settings.subagent_root:
        return Path(os.path.expandvars(settings.subagent_root)).expanduser()
    return default_root(settings.provider)


def default_root(kind: str) -> Path:
    folder = "vscode-insiders-agents" if kind == "vscode-insiders" else "vscode-agents"
    return Path.home() / ".subagent" / folder


class LockOwner(BaseModel):
    """What a lock file holds: enough to tell a live owner from a dead one, on any host."""

    model_config = ConfigDict(extra="ignore", frozen=True)

    host: str
    pid: int
    job_id: str
    request_id: str
    token: str
    claimed_at: datetime
    lease_expires_at: datetime


@dataclass(frozen=True)
class Workspace:
    folder: Path

    @property
    def name(self) -> str:
        return self.folder.name

    @property
    def number(self) -> int:
        match = _NAME.fullmatch(self.name)
        return int(match.group(1)) if match else 0

    @property
    def workspace_file(self) -> Path:
        return self.folder / f"{self.name}.code-workspace"

    @property
    def lock_file(self) -> Path:
        return self.folder / LOCK_FILE

    @property
    def alive_file(self) -> Path:
        return self.folder / ALIVE_FILE

    @property
    def messages(self) -> Path:
        return self.folder / MESSAGES_FOLDER

    def locked(self) -> bool:
        return self.lock_file.exists()

    def owner(self) -> LockOwner | None:
        """The lock's owner; None when unlocked, or locked by a tool that writes no owner."""
        try:
            return LockOwner.model_validate_json(self.lock_file.read_text(encoding="utf-8"))
        except (OSError, ValidationError, UnicodeDecodeError):
            return None

    def install(self, template: WorkspaceTemplate) -> None:
        """A fresh copy of the template's files (recycled workspaces get one at every claim)."""
        template.install(self.folder, {TEMPLATE_WORKSPACE_FILE: self.workspace_file.name})
        self.messages.mkdir(exist_ok=True)


@dataclass
class ProvisionReport:
    root: Path
    created: list[str] = field(default_factory=list)
    refreshed: list[str] = field(default_factory=list)
    busy: list[str] = field(default_factory=list)
    total: int = 0


class WorkspacePool:
    def __init__(self, root: Path, client: redis.Redis | None = None) -> None:
        self.root = root
        self.client = client

    def workspaces(self) -> list[Workspace]:
        """Every `subagent-N` folder, by number; other names in the root are not ours."""
        if not self.root.is_dir():
            return []
        found = [Workspace(p) for p in self.root.iterdir() if _NAME.fullmatch(p.name)]
        return sorted((w for w in found if w.folder.is_dir()), key=lambda w: w.number)

    def provision(
        self, count: int, template: WorkspaceTemplate, *, force: bool = False
    ) -> ProvisionReport:
        """Make `subagent-1` … `subagent-<count>` exist with fresh template files.

        A busy workspace is left alone, unless `force` also takes its lock away.
        """
        report = ProvisionReport(self.root)
        self.root.mkdir(parents=True, exist_ok=True)
        with self.mutex():
            for number in range(1, count + 1):
                workspace = Workspace(self.root / f"subagent-{number}")
                if workspace.locked() and not force:
                    report.busy.append(workspace.name)
                    continue
                existed = workspace.folder.exists()
                workspace.folder.mkdir(exist_ok=True)
                self._unlock(workspace)
                workspace.alive_file.unlink(missing_ok=True)
                workspace.install(template)
                (report.refreshed if existed else report.created).append(workspace.name)
        report.total = len(self.workspaces())
        return report

    def claim(self, job_id: str, request_id: str) -> Claim | None:
        """The first free workspace, now this job's; None when every one is busy."""
        if not self.root.is_dir():
            return None
        with self.mutex():
            for workspace in self.workspaces():
                reclaimed = None
                if workspace.locked():
                    owner = workspace.owner()
                    if owner is None or not self.is_stale(workspace, owner):
                        continue
                    self._unlock(workspace)
                    reclaimed = owner
                owner = self._new_owner(job_id, request_id)
                lease = self._lease(workspace)
                if lease is not None and not lease.acquire(blocking=False, token=owner.token):
                    continue  # a worker on another host holds it
                if _create_exclusive(workspace.lock_file, owner.model_dump_json()):
                    return Claim(self, workspace, owner, lease, reclaimed)
                if lease is not None:
                    _release_lease(lease, owner.token)
        return None

    def unlock(self, names: list[str] | None = None) -> list[tuple[Workspace, LockOwner | None]]:
        """Take the locks off these workspaces (all when None): who held each, if anyone."""
        with self.mutex():
            unlocked = []
            for workspace in self.workspaces():
                if (names is None or workspace.name in names) and workspace.locked():
                    owner = workspace.owner()
                    self._unlock(workspace)
                    unlocked.append((workspace, owner))
            return unlocked

    def is_stale(self, workspace: Workspace, owner: LockOwner) -> bool:
        """The owner's process is gone (this host), or its lease has run out everywhere."""
        if owner.host == HOST and not pid_alive(owner.pid):
            return True
        if self.client is not None:
            with contextlib.suppress(redis.RedisError):
                if self.client.get(self._lease_key(workspace)) == owner.token:
                    return False
        return owner.lease_expires_at < datetime.now(UTC)

    def _new_owner(self, job_id: str, request_id: str) -> LockOwner:
        now = datetime.now(UTC)
        return LockOwner(
            host=HOST,
            pid=os.getpid(),
            job_id=job_id,
            request_id=request_id,
            token=uuid.uuid4().hex,
            claimed_at=now,
            lease_expires_at=now + timedelta(seconds=LEASE_SECONDS),
        )

    def _unlock(self, workspace: Workspace) -> None:
        owner = workspace.owner()
        workspace.lock_file.unlink(missing_ok=True)
        lease = self._lease(workspace)
        if owner is not None and lease is not None:
            _release_lease(lease, owner.token)

    def _lease_key(self, workspace: Workspace) -> str:
        return workspace_lease_key(HOST, str(workspace.folder.resolve()))

    def _lease(self, workspace: Workspace) -> redis.lock.Lock | None:
        if self.client is None:
            return None
        lease: redis.lock.Lock = self.client.lock(
            self._lease_key(workspace), timeout=LEASE_SECONDS, thread_local=False
        )
        return lease

    def mutex(self) -> FileLock:
        """The host-wide lock every claim, renewal and release of this pool takes."""
        self.root.mkdir(parents=True, exist_ok=True)
        return FileLock(str(self.root / MUTEX_FILE), timeout=MUTEX_TIMEOUT_SECONDS)


class Claim:
    """One job's hold on one workspace; renew it while the job runs, release it always."""

    def __init__(
        self,
        pool: WorkspacePool,
        workspace: Workspace,
        owner: LockOwner,
        lease: redis.lock.Lock | None,
        reclaimed_from: LockOwner | None,
    ) -> None:
        self.pool = pool
        self.workspace = workspace
        self.owner = owner
        self.lease = lease
        self.reclaimed_from = reclaimed_from
        self.lost = threading.Event()

    @contextlib.contextmanager
    def held(self) -> Iterator[Claim]:
        """Renew the claim while the block runs; release it however the block ends."""
        try:
            with keep_renewed(
                self.renew, LEASE_SECONDS / 3, f"workspace {self.workspace.name}", self.lost
            ):
                yield self
        finally:
            self.release()

    def renew(self) -> bool:
        with self.pool.mutex():
            current = self.workspace.owner()
            if current is None or current.token != self.owner.token:
                return False
            self.owner = self.owner.model_copy(
                update={"lease_expires_at": datetime.now(UTC) + timedelta(seconds=LEASE_SECONDS)}
            )
            _replace(self.workspace.lock_file, self.owner.model_dump_json())
            if self.lease is not None:
                try:
                    self.lease.reacquire()
                except redis.exceptions.LockNotOwnedError:
                    # The lease ran out (Redis restarted, or a long stall); take it again.
                    return bool(self.lease.acquire(blocking=False, token=self.owner.token))
            return True

    def release(self) -> None:
        with self.pool.mutex():
            current = self.workspace.owner()
            if current is not None and current.token == self.owner.token:
                self.workspace.lock_file.unlink(missing_ok=True)
        if self.lease is not None:
            _release_lease(self.lease, self.owner.token)


def _create_exclusive(path: Path, text: str) -> bool:
    """Create `path` holding `text`, or return False if it exists; never half-written."""
    temporary = path.with_name(f".{path.name}.{uuid.uuid4().hex}")
    temporary.write_text(text, encoding="utf-8")
    try:
        os.link(temporary, path)
        return True
    except FileExistsError:
        return False
    finally:
        temporary.unlink(missing_ok=True)


def _replace(path: Path, text: str) -> None:
    temporary = path.with_name(f".{path.name}.{uuid.uuid4().hex}")
    temporary.write_text(text, encoding="utf-8")
    os.replace(temporary, path)


def _release_lease(lease: redis.lock.Lock, token: str) -> None:
    """Drop the lease if `token` still holds it; a lease already gone is fine."""
    with contextlib.suppress(redis.RedisError):
        lease.do_release(token)


def default_pool_size() -> int:
    """Workspaces in this user's default pools (VS Code and Insiders), at least one."""
    kinds = ("vscode", "vscode-insiders")
    return max(1, sum(len(WorkspacePool(default_root(k)).workspaces()) for k in kinds))

"""Claims on the workspace pool: exclusive under contention, reclaimed only when stale."""

from __future__ import annotations

import json
import subprocess
import sys
import threading
from datetime import UTC, datetime, timedelta
from pathlib import Path

import redis

from evalrelay.worker.agents.templates import WorkspaceTemplate
from evalrelay.worker.agents.vscode_pool import HOST, Claim, LockOwner, WorkspacePool

TEMPLATE = WorkspaceTemplate.load("vscode")


def pool_of(tmp_path: Path, count: int, client: redis.Redis | None = None) -> WorkspacePool:
    pool = WorkspacePool(tmp_path / "pool", client)
    pool.provision(count, TEMPLATE)
    return pool


def dead_pid() -> int:
    process = subprocess.Popen(["true"])
    process.wait()
    return process.pid


def write_owner(pool: WorkspacePool, name: str, **fields: object) -> None:
    now = datetime.now(UTC)
    owner = {
        "host": HOST,
        "pid": dead_pid(),
        "job_id": "old-job",
        "request_id": "old",
        "token": "old-token",
        "claimed_at": now.isoformat(),
        "lease_expires_at": (now + timedelta(seconds=60)).isoformat(),
        **fields,
    }
    (pool.root / name / "subagent.lock").write_text(json.dumps(owner, default=str))


def test_provision_makes_the_subagent_layout(tmp_path: Path) -> None:
    pool = WorkspacePool(tmp_path / "pool")
    report = pool.provision(2, TEMPLATE)
    assert report.created == ["subagent-1", "subagent-2"] and report.total == 2
    folder = tmp_path / "pool" / "subagent-2"
    workspace = json.loads((folder / "subagent-2.code-workspace").read_text())
    assert workspace["folders"] == [{"path": "."}]
    assert (folder / ".github" / "agents" / "wakeup.md").exists()
    assert (folder / "messages").is_dir()
    assert not (folder / "task.md").exists()  # the task template is for requests only


def test_provision_leaves_busy_workspaces_unless_forced(tmp_path: Path) -> None:
    pool = pool_of(tmp_path, 2)
    claim = pool.claim("job", "r")
    assert claim is not None and claim.workspace.name == "subagent-1"
    again = pool.provision(3, TEMPLATE)
    assert (again.busy, again.refreshed, again.created) == (
        ["subagent-1"],
        ["subagent-2"],
        ["subagent-3"],
    )
    assert claim.workspace.locked()
    forced = pool.provision(1, TEMPLATE, force=True)
    assert forced.refreshed == ["subagent-1"] and not claim.workspace.locked()


def test_twenty_threads_on_a_pool_of_two_get_two_claims(
    tmp_path: Path, client: redis.Redis
) -> None:
    pool = pool_of(tmp_path, 2, client)
    claims: list[Claim | None] = []
    barrier = threading.Barrier(20)

    def take(i: int) -> None:
        barrier.wait()
        claims.append(WorkspacePool(pool.root, client).claim(f"job-{i}", f"r{i}"))

    threads = [threading.Thread(target=take, args=(i,)) for i in range(20)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    held = [c for c in claims if c is not None]
    assert sorted(c.workspace.name for c in held) == ["subagent-1", "subagent-2"]
    for claim in held:
        assert claim.workspace.owner() == claim.owner


CLAIM_IN_A_PROCESS = """
import sys, time
from pathlib import Path
from evalrelay.worker.agents.vscode_pool import WorkspacePool
claim = WorkspacePool(Path(sys.argv[1])).claim("job", "r")
print(claim.workspace.name if claim else "none", flush=True)
time.sleep(5)
"""


def test_processes_racing_for_one_workspace_get_one_claim(tmp_path: Path) -> None:
    pool = pool_of(tmp_path, 1)
    racers = [
        subprocess.Popen(
            [sys.executable, "-c", CLAIM_IN_A_PROCESS, str(pool.root)],
            stdout=subprocess.PIPE,
            text=True,
        )
        for _ in range(6)
    ]
    answers = []
    for racer in racers:
        assert racer.stdout is not None
        answers.append(racer.stdout.readline().strip())
    for racer in racers:
        racer.kill()
        racer.wait()
    assert sorted(answers) == ["none"] * 5 + ["subagent-1"]


def test_lock_of_a_dead_process_on_this_host_is_reclaimed(tmp_path: Path) -> None:
    pool = pool_of(tmp_path, 1)
    write_owner(pool, "subagent-1")
    claim = pool.claim("new-job", "new")
    assert claim is not None
    assert claim.reclaimed_from is not None and claim.reclaimed_from.job_id == "old-job"
    assert claim.workspace.owner() == claim.owner


def test_lock_held_elsewhere_is_kept_while_its_lease_lives(
    tmp_path: Path, client: redis.Redis
) -> None:
    pool = pool_of(tmp_path, 1, client)
    write_owner(pool, "subagent-1", host="other-host", pid=1)
    client.set(pool._lease_key(pool.workspaces()[0]), "old-token", px=60_000)
    assert pool.claim("new-job", "new") is None
    # The owner's heartbeat stops: its Redis lease and the lock's expiry both run out.
    client.delete(pool._lease_key(pool.workspaces()[0]))
    expired = (datetime.now(UTC) - timedelta(seconds=1)).isoformat()
    write_owner(pool, "subagent-1", host="other-host", pid=1, lease_expires_at=expired)
    claim = pool.claim("new-job", "new")
    assert claim is not None and claim.reclaimed_from is not None


def test_lock_without_an_owner_is_left_to_unlock(tmp_path: Path) -> None:
    pool = pool_of(tmp_path, 1)
    (pool.root / "subagent-1" / "subagent.lock").write_text("")  # subagent's own empty lock
    assert pool.claim("job", "r") is None
    [(workspace, owner)] = pool.unlock()
    assert workspace.name == "subagent-1" and owner is None
    assert pool.claim("job", "r") is not None


def test_renewal_extends_the_lease_and_notices_a_lost_lock(
    tmp_path: Path, client: redis.Redis
) -> None:
    pool = pool_of(tmp_path, 1, client)
    claim = pool.claim("job", "r")
    assert claim is not None
    before = claim.owner.lease_expires_at
    client.pexpire(pool._lease_key(claim.workspace), 1000)
    assert claim.renew()
    stored = claim.workspace.owner()
    assert stored is not None and stored.lease_expires_at > before
    assert client.pttl(pool._lease_key(claim.workspace)) > 5000
    # `evalrelay unlock` and another job's claim take the workspace: renewal says so.
    pool.unlock()
    other = pool.claim("other", "r2")
    assert other is not None
    assert not claim.renew()
    claim.release()  # releasing a lost claim leaves the new owner's lock alone
    assert other.workspace.owner() == other.owner


def test_owner_model_reads_what_claims_write(tmp_path: Path) -> None:
    pool = pool_of(tmp_path, 1)
    claim = pool.claim("job", "r")
    assert claim is not None
    text = claim.workspace.lock_file.read_text()
    owner = LockOwner.model_validate_json(text)
    assert (owner.host, owner.job_id, owner.request_id) == (HOST, "job", "r")
    assert set(json.loads(text)) >= {"host", "pid", "job_id", "lease_expires_at"}

"""Agent homes: one per running job, seeded from the user's own, reused once free, and
removed once their process is gone (real processes, exiting or killed)."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
from pathlib import Path

from evalrelay.worker.agents.homes import agent_home


def test_concurrent_jobs_get_separate_homes_seeded_with_the_users_files(tmp_path: Path) -> None:
    usual = tmp_path / "dot-codex"
    usual.mkdir()
    (usual / "config.toml").write_text('model = "o3"\n')
    seeds = ("config.toml", "auth.json")
    with agent_home("codex", usual, seeds) as first, agent_home("codex", usual, seeds) as second:
        assert first != second
        assert (second / "config.toml").read_text() == 'model = "o3"\n'
        assert not (second / "auth.json").exists()
    with agent_home("codex", usual, ("config.toml",)) as again:
        assert again == first


def test_a_newer_user_file_replaces_the_seeded_copy(tmp_path: Path) -> None:
    usual = tmp_path / "dot-copilot"
    usual.mkdir()
    config = usual / "config.json"
    config.write_text("{}")
    with agent_home("copilot", usual, ("config.json",)) as home:
        pass
    config.write_text('{"model": "new"}')
    os.utime(config, (config.stat().st_atime, (home / "config.json").stat().st_mtime + 10))
    with agent_home("copilot", usual, ("config.json",)) as home:
        assert (home / "config.json").read_text() == '{"model": "new"}'


HOLDER = """
import sys, time
from pathlib import Path
from evalrelay.worker.agents.homes import agent_home
with agent_home("codex", Path(sys.argv[1]), ("config.toml",)) as home:
    print(home, flush=True)
    if sys.argv[2] == "hold":
        time.sleep(600)
"""
"""A worker process in miniature: it takes a home, then exits or holds it until killed."""

REPO = Path(__file__).parents[3]


def holder(usual: Path, mode: str) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-c", HOLDER, str(usual), mode],
        cwd=REPO,
        stdout=subprocess.PIPE,
        text=True,
        start_new_session=True,
    )


def home_of(process: subprocess.Popen[str]) -> Path:
    assert process.stdout is not None
    return Path(process.stdout.readline().strip())


def test_a_worker_process_removes_its_home_when_it_exits(
    tmp_path: Path, private_home: Path
) -> None:
    process = holder(tmp_path, "exit")
    home = home_of(process)
    assert process.wait(60) == 0
    assert home.parent == private_home / "agent-homes" / "codex"
    assert home.name == f"{socket.gethostname()}-{process.pid}-1"
    assert not home.exists()


def test_homes_of_killed_processes_are_removed_by_the_next_process_live_ones_kept(
    tmp_path: Path, private_home: Path
) -> None:
    killed, alive = holder(tmp_path, "hold"), holder(tmp_path, "hold")
    try:
        killed_home, alive_home = home_of(killed), home_of(alive)
        os.killpg(killed.pid, signal.SIGKILL)
        killed.wait(30)
        assert killed_home.is_dir()  # nothing runs at SIGKILL
        other_host = private_home / "agent-homes" / "codex" / f"elsewhere-{killed.pid}-1"
        other_host.mkdir()
        next_one = holder(tmp_path, "exit")
        next_home = home_of(next_one)
        assert next_one.wait(60) == 0
        assert not killed_home.exists()
        assert alive_home.is_dir()
        assert other_host.is_dir()  # another machine's: it does not know that pid
        assert not next_home.exists()
    finally:
        os.killpg(alive.pid, signal.SIGKILL)
        alive.wait(30)

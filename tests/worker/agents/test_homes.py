"""Agent homes: one per running job, seeded from the user's own, reused once free."""

from __future__ import annotations

import os
from pathlib import Path

from worker.agents.homes import agent_home


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

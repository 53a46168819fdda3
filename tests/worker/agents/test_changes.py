"""A workspace's changes since it was built: added, modified and deleted files, binary ones
listed but not diffed, the worker's own files left out, and the diff cut to its limit."""

from __future__ import annotations

from pathlib import Path

import pytest

from evalrelay.worker.agents import changes as changes_module
from evalrelay.worker.agents.changes import Snapshot


def test_text_changes_are_one_unified_diff_and_binary_ones_are_listed(tmp_path: Path) -> None:
    (tmp_path / "inputs").mkdir()
    (tmp_path / "inputs" / "a.py").write_text("one\ntwo\n")
    (tmp_path / "gone.txt").write_text("bye\n")
    (tmp_path / "blob.bin").write_bytes(b"\0\1")
    snapshot = Snapshot(tmp_path, frozenset({"transcript.jsonl"}))

    (tmp_path / "inputs" / "a.py").write_text("one\n2\n")
    (tmp_path / "gone.txt").unlink()
    (tmp_path / "blob.bin").write_bytes(b"\0\2")
    (tmp_path / "new.md").write_text("fresh")
    (tmp_path / "transcript.jsonl").write_text("{}\n")  # the worker's, not the agent's
    changes = snapshot.changes()

    assert [(f.path, f.change, f.in_diff) for f in changes.files] == [
        ("blob.bin", "modified", False),
        ("gone.txt", "deleted", True),
        ("inputs/a.py", "modified", True),
        ("new.md", "added", True),
    ]
    assert changes.diff == (
        "--- a/gone.txt\n+++ /dev/null\n@@ -1 +0,0 @@\n-bye\n"
        "--- a/inputs/a.py\n+++ b/inputs/a.py\n@@ -1,2 +1,2 @@\n one\n-two\n+2\n"
        "--- /dev/null\n+++ b/new.md\n@@ -0,0 +1 @@\n+fresh\n\\ No newline at end of file\n"
    )
    assert changes.diff_chars_cut == 0


def test_an_unchanged_workspace_has_no_changes_and_a_long_diff_is_cut(tmp_path: Path) -> None:
    (tmp_path / "a.txt").write_text("same\n")
    snapshot = Snapshot(tmp_path)
    assert snapshot.changes().files == [] and snapshot.changes().diff == ""

    (tmp_path / "big.txt").write_text("".join(f"line {n}\n" for n in range(5000)))
    changes = snapshot.changes(diff_chars=1000)
    assert len(changes.diff) < 1100 and changes.diff_chars_cut > 40_000
    assert changes.diff.startswith("--- /dev/null\n+++ b/big.txt\n")
    assert changes.diff.endswith("+line 4999\n")
    assert f"[... {changes.diff_chars_cut} characters cut ...]" in changes.diff


def test_past_the_text_budget_files_are_compared_by_hash(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(changes_module, "TEXT_BYTES", 10)
    (tmp_path / "a.txt").write_text("12345678\n")  # 9 characters: within the budget
    (tmp_path / "b.txt").write_text("more text\n")  # past it
    snapshot = Snapshot(tmp_path)
    (tmp_path / "a.txt").write_text("changed\n")
    (tmp_path / "b.txt").write_text("changed\n")
    changes = snapshot.changes()
    assert [(f.path, f.in_diff) for f in changes.files] == [("a.txt", True), ("b.txt", False)]
    assert "a.txt" in changes.diff and "b.txt" not in changes.diff


def test_a_file_kept_as_text_once_and_hashed_once_is_unchanged_when_its_bytes_are(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(changes_module, "TEXT_BYTES", 10)
    (tmp_path / "a.txt").write_text("1\n")
    (tmp_path / "b.txt").write_text("same\n")  # text before: the budget holds both
    snapshot = Snapshot(tmp_path)
    (tmp_path / "a.txt").write_text("123456789\n")  # now a.txt takes the budget
    changes = snapshot.changes()
    assert [(f.path, f.change) for f in changes.files] == [("a.txt", "modified")]

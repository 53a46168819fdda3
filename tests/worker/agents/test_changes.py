"""A workspace's changes since it was built: added, modified and deleted files, binary ones
listed but not diffed, the worker's own files left out, and the diff cut to its limit."""

from __future__ import annotations

from pathlib import Path

from worker.agents.changes import Snapshot


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

    assert [(f.path, f.change, f.binary) for f in changes.files] == [
        ("blob.bin", "modified", True),
        ("gone.txt", "deleted", False),
        ("inputs/a.py", "modified", False),
        ("new.md", "added", False),
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

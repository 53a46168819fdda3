"""Attached files: what is read is checked on the opened file itself."""

from __future__ import annotations

from pathlib import Path

import pytest

from evalrelay.bridge.evalfile.files import FileRefError, resolve_file
from evalrelay.bridge.evalfile.project import Project
from tests.conftest import WriteFiles


def test_a_folder_swapped_for_a_link_after_the_check_is_not_read_through(
    project: WriteFiles, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The race of a shared tree: `notes/` is checked while it is a folder inside the
    project, then becomes a link to a folder outside before the file is opened."""
    root = project({"notes/a.txt": "inside\n", "evals/x.yaml": ""})
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "a.txt").write_text("secret\n")
    real_resolve = Path.resolve

    def resolve_then_swap(self: Path, strict: bool = False) -> Path:
        resolved = real_resolve(self, strict)
        if self.name == "a.txt" and (root / "notes").is_dir() and not (root / "notes").is_symlink():
            (root / "notes" / "a.txt").unlink()
            (root / "notes").rmdir()
            (root / "notes").symlink_to(outside)
        return resolved

    monkeypatch.setattr(Path, "resolve", resolve_then_swap)
    with pytest.raises(FileRefError, match="changed into a link outside the project root"):
        resolve_file("/notes/a.txt", root / "evals" / "x.yaml", Project.containing(root / "evals"))


def test_an_attachment_name_too_long_is_an_error_not_a_crash(project: WriteFiles) -> None:
    root = project({"evals/x.yaml": ""})
    with pytest.raises(FileRefError, match="File name too long"):
        resolve_file("n" * 300, root / "evals" / "x.yaml", Project.containing(root / "evals"))

"""Shared fixtures: small projects on disk, written by the tests themselves."""

from __future__ import annotations

import textwrap
from collections.abc import Callable
from pathlib import Path

import pytest

WriteFiles = Callable[[dict[str, str]], Path]


@pytest.fixture
def project(tmp_path: Path) -> WriteFiles:
    """A project root (it holds evalrelay.yaml) into which a test writes the files it needs."""
    root = tmp_path / "project"
    root.mkdir()
    (root / "evalrelay.yaml").write_text('guideline_patterns: ["**/*.instructions.md"]\n')

    def write(files: dict[str, str]) -> Path:
        for name, text in files.items():
            path = root / name
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(textwrap.dedent(text), encoding="utf-8")
        return root

    return write

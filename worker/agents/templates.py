"""Workspace templates: the built-in folder of an agent kind, overlaid by a target's own.

A target's `workspace_template` names a folder; its files replace the built-in files of
the same relative path and add to them, so a custom template can change just the task
markdown. It is checked before any workspace is touched, so a bad template costs nothing.
"""

from __future__ import annotations

import os
from pathlib import Path

from evalrelay.workspace_templates import BUILTIN

TASK_FILE = "task.md"


class TemplateError(ValueError):
    """A target's template folder is missing or unreadable."""


class WorkspaceTemplate:
    def __init__(self, files: dict[str, str]) -> None:
        self.files = files
        """Relative path (with `/`) → text, the task markdown included."""

    @classmethod
    def load(cls, kind: str, custom: str | None = None) -> WorkspaceTemplate:
        files = _read_tree(BUILTIN / kind)
        if custom:
            folder = Path(os.path.expandvars(custom)).expanduser()
            if not folder.exists():
                raise TemplateError(f"workspace template not found: {folder}")
            if not folder.is_dir():
                raise TemplateError(
                    f"workspace template must be a folder, not a file: {folder}; put the "
                    f"file in a folder and name the folder"
                )
            files.update(_read_tree(folder))
        if TASK_FILE not in files:
            raise TemplateError(f"the {kind} workspace template has no {TASK_FILE}")
        return cls(files)

    @property
    def task(self) -> str:
        return self.files[TASK_FILE]

    def install(self, folder: Path, renames: dict[str, str] | None = None) -> None:
        """Write every file but the task markdown into `folder`, renamed where `renames` says."""
        for relative, text in self.files.items():
            if relative == TASK_FILE:
                continue
            path = folder / (renames or {}).get(relative, relative)
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(text, encoding="utf-8")


def _read_tree(folder: Path) -> dict[str, str]:
    files: dict[str, str] = {}
    for path in sorted(folder.rglob("*")):
        if path.is_file() and path.name != "__init__.py" and "__pycache__" not in path.parts:
            try:
                files[path.relative_to(folder).as_posix()] = path.read_text(encoding="utf-8")
            except (OSError, UnicodeDecodeError) as exc:
                raise TemplateError(f"cannot read template file {path}: {exc}") from None
    return files

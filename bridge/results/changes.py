"""What an agent changed in its workspace: the files added, modified and deleted since
the workspace was built (template, attached files, task), and a unified diff of them cut
to a size limit. The result line keeps it as `workspace_changes`."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

DIFF_CHARS = 50_000
"""The diff is kept up to this many characters."""


class FileChange(BaseModel):
    model_config = ConfigDict(extra="forbid")

    path: str
    """Relative to the workspace, `/`-separated."""
    change: Literal["added", "modified", "deleted"]
    in_diff: bool = True
    """False for a file not compared line by line (binary, or past the worker's limits
    of size): listed, not in the diff."""


class WorkspaceChanges(BaseModel):
    model_config = ConfigDict(extra="forbid")

    files: list[FileChange] = Field(default_factory=list)
    diff: str = ""
    diff_chars_cut: int = 0

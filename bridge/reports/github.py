"""What a CI job on GitHub Actions shows of a run or a comparison: a step summary (Markdown
appended to the file `$GITHUB_STEP_SUMMARY` names) and `::error` annotations at the eval
file line of each failed case, in the workflow-command format GitHub documents
(https://docs.github.com/actions/reference/workflow-commands-for-github-actions)."""

from __future__ import annotations

import os
from pathlib import Path


def under_github_actions() -> bool:
    """GitHub sets `GITHUB_ACTIONS=true` in every step."""
    return os.environ.get("GITHUB_ACTIONS") == "true"


def write_step_summary(markdown: str) -> Path | None:
    """Appended, as each step's summary is; None when GitHub gave no file."""
    name = os.environ.get("GITHUB_STEP_SUMMARY")
    if not name:
        return None
    path = Path(name)
    with path.open("a", encoding="utf-8") as handle:
        handle.write(markdown)
    return path


def error_annotation(file: str, line: int, title: str, message: str) -> str:
    """`::error file=F,line=L,title=T::MESSAGE`, escaped as GitHub's toolkit escapes them."""
    return f"::error file={_property(file)},line={line},title={_property(title)}::{_data(message)}"


def _data(text: str) -> str:
    return text.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def _property(text: str) -> str:
    return _data(text).replace(":", "%3A").replace(",", "%2C")

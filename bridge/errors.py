"""Errors the submitting side raises; the CLI turns each into one clear message."""

from __future__ import annotations

from pathlib import Path
from typing import NamedTuple


class Diagnostic(NamedTuple):
    """One problem at one place in one file."""

    path: Path
    line: int
    column: int
    message: str
    case_id: str | None = None

    def __str__(self) -> str:
        return self.shown()

    def shown(self, kind: str = "") -> str:
        """`path:line:column: [kind: ][case 'id': ]message`, the form editors jump to."""
        case = f"case '{self.case_id}': " if self.case_id else ""
        label = f"{kind}: " if kind else ""
        return f"{self.path}:{self.line}:{self.column}: {label}{case}{self.message}"


class EvalrelayError(Exception):
    """Base of every error evalrelay reports to a user instead of a traceback."""


class InvalidFileError(EvalrelayError):
    """Raised when a YAML file (eval file, config or targets) has errors; holds all of them."""

    def __init__(self, diagnostics: list[Diagnostic]) -> None:
        self.diagnostics = diagnostics
        super().__init__("\n".join(str(d) for d in diagnostics))


class TargetError(EvalrelayError):
    """Raised when a target is unknown, or cannot be used as configured on this machine."""


class PrerequisiteError(EvalrelayError):
    """Raised when something evalrelay needs is missing or unreachable: Redis, an SDK, a binary."""

"""What a file dropped in the inbox may do: the trust model of `evalrelay watch`.

Whoever can write to the inbox is not the operator. A dropped file runs with the
operator's configuration only (the project configuration and targets files outside the
inbox): a targets file inside it could turn the operator's target into a command, or point
a keyed target at another server. What the file itself may hold is the allow-list of
`bridge.evalfile.untrusted`, checked as it loads; how many jobs it may make is bounded
here. Each bound is lifted only when the operator says so when starting the watcher.
"""

from __future__ import annotations

from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field

from evalrelay.bridge.errors import Diagnostic, InvalidFileError
from evalrelay.bridge.evalfile.cases import LoadedEvalFile
from evalrelay.bridge.evalfile.project import AGENTV_CONFIG, CONFIG_NAME, Project, find_root
from evalrelay.bridge.evalfile.untrusted import Untrusted
from evalrelay.bridge.targets.targets_file import TARGET_FILES

CONFIG_FILES = (CONFIG_NAME, str(AGENTV_CONFIG), *TARGET_FILES)
"""Files that configure a project or its targets when they stand beside an eval file or
above it."""

DEFAULT_MAX_JOBS = 10_000
"""Jobs one dropped file may make unless the operator raises it."""
DEFAULT_BUDGET_USD = 10.0
"""Dollars one dropped file's campaign may spend unless the operator says otherwise: a
file of cheap-looking cases against a priced model costs no more than this."""


class InboxTrust(BaseModel):
    """The operator's opt-ins, from `evalrelay watch --allow-code / --trust-inbox-config /
    --max-jobs-per-file / --budget-per-file`. What a dropped file may hold is the allow-list of
    `bridge.evalfile.untrusted`; these lift parts of it."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    allow_code: bool = False
    """Dropped files may name code: script evaluators, transforms, workspace commands,
    test generators and prompt functions."""
    inbox_config: bool = False
    """Configuration files inside the inbox are read, as for a file run by hand: droppers
    may then define targets, including ones that run commands or send keys elsewhere."""
    max_jobs: int = Field(default=DEFAULT_MAX_JOBS, ge=1)
    """Jobs one dropped file may make (cases times repeats times targets)."""
    budget_usd: float | None = Field(default=DEFAULT_BUDGET_USD, gt=0)
    """Dollars each dropped file's campaign may spend (answers and judges, as priced);
    reaching it pauses the campaign. None: no budget."""

    def untrusted(self, inbox_root: Path) -> Untrusted:
        return Untrusted(
            inbox=inbox_root, allow_code=self.allow_code, define_targets=self.inbox_config
        )

    def project(self, inbox_root: Path, drop: Path) -> Project:
        """The project a dropped file loads in: without `inbox_config`, the operator's, read
        from the inbox's parent folder upwards; a configuration file inside the inbox that
        would apply to the file refuses it (InvalidFileError) rather than be passed over.
        Either way the file is untrusted: it loads under the allow-list."""
        untrusted = self.untrusted(inbox_root)
        if self.inbox_config:
            return Project(find_root(drop), near=drop, untrusted=untrusted)
        found = inbox_config_files(inbox_root, drop)
        if found:
            why = (
                "in the inbox would configure this file; the watcher reads only the "
                "operator's configuration, outside the inbox: move it beside the inbox, or "
                "start the watcher with --trust-inbox-config if everyone who can write here "
                "is trusted"
            )
            raise InvalidFileError(
                [Diagnostic(drop, 1, 1, f"{p.relative_to(inbox_root)} {why}") for p in found]
            )
        operator = inbox_root.parent
        return Project(
            find_root(operator), near=operator, configured_at=operator, untrusted=untrusted
        )

    def check(self, loaded: LoadedEvalFile) -> None:
        """Refuse (InvalidFileError) a file that would make more jobs than `max_jobs`,
        before they are planned: `repeats: 1000` on a thousand cases is a million jobs."""
        jobs = job_count(loaded)
        if jobs > self.max_jobs:
            why = (
                f"this file makes {jobs} jobs (cases times repeats times targets), over the "
                f"{self.max_jobs} a dropped file may make; split it, lower `repeats`, or start "
                "the watcher with a higher --max-jobs-per-file"
            )
            raise InvalidFileError([Diagnostic(loaded.path, 1, 1, why)])


def job_count(loaded: LoadedEvalFile) -> int:
    """The jobs the file makes at most: each case once per repeat on each of its targets."""
    file_targets = len(set(loaded.spec.target_names())) or 1
    return sum(
        (case.case.repeats or loaded.spec.repeats or 1)
        * (len(set(case.case.target_names())) or file_targets)
        for case in loaded.cases
    )


def inbox_config_files(inbox_root: Path, drop: Path) -> list[Path]:
    """The configuration files inside the inbox on the way from `drop` up to its root."""
    folder = drop.parent
    found = []
    while folder.is_relative_to(inbox_root):
        found += [folder / name for name in CONFIG_FILES if (folder / name).is_file()]
        if folder == inbox_root:
            break
        folder = folder.parent
    return found

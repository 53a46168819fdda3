"""What a file dropped in the inbox may do: the trust model of `evalrelay watch`.

Whoever can write to the inbox is not the operator. A dropped file runs with the
operator's configuration only (the project configuration and targets files outside the
inbox): a targets file inside it could turn the operator's target into a command, or point
a keyed target at another server. Evaluators that run commands on the workers are refused
too. Each is allowed only when the operator says so when starting the watcher.
"""

from __future__ import annotations

from pathlib import Path

from pydantic import BaseModel, ConfigDict

from bridge.errors import Diagnostic, InvalidFileError
from bridge.evalfile.cases import LoadedEvalFile, eval_document, written_evaluators
from bridge.evalfile.evaluators import CodeEvaluator, CompositeEvaluator, EvaluatorSpec
from bridge.evalfile.project import AGENTV_CONFIG, CONFIG_NAME, Project, find_root
from bridge.targets.targets_file import TARGET_FILES

CONFIG_FILES = (CONFIG_NAME, str(AGENTV_CONFIG), *TARGET_FILES)
"""Files that configure a project or its targets when they stand beside an eval file or
above it."""


class InboxTrust(BaseModel):
    """The operator's opt-ins, from `evalrelay watch --allow-code / --trust-inbox-config`."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    allow_code: bool = False
    """Dropped files may name evaluators that run commands on the workers."""
    inbox_config: bool = False
    """Configuration files inside the inbox are read, as for a file run by hand: droppers
    may then define targets, including ones that run commands or send keys elsewhere."""

    def project(self, inbox_root: Path, drop: Path) -> Project:
        """The project a dropped file loads in: without `inbox_config`, the operator's, read
        from the inbox's parent folder upwards; a configuration file inside the inbox that
        would apply to the file refuses it (InvalidFileError) rather than be passed over."""
        if self.inbox_config:
            return Project.containing(drop)
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
        return Project(find_root(operator), near=operator, configured_at=operator)

    def check(self, loaded: LoadedEvalFile) -> None:
        """Refuse (InvalidFileError, each place named) what the file may not do."""
        if self.allow_code:
            return
        runs_code = [
            (loc, spec, case_id)
            for loc, spec, case_id in written_evaluators(loaded.spec)
            if _command_of(spec)
        ]
        if not runs_code:
            return
        doc = eval_document(loaded.path, loaded.project).document
        raise InvalidFileError(
            [
                doc.diagnostic(
                    loc,
                    f"evaluator {spec.type} runs a command on the workers ({_command_of(spec)}); "
                    "files dropped in the inbox may not run code: start the watcher with "
                    "--allow-code if everyone who can write here is trusted",
                    case_id,
                )
                for loc, spec, case_id in runs_code
            ]
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


def _command_of(spec: EvaluatorSpec) -> str | None:
    """The command an evaluator runs on the workers, shortened, if it runs one."""
    if isinstance(spec, CodeEvaluator):
        command = spec.script if isinstance(spec.script, str) else " ".join(spec.script)
    elif isinstance(spec, CompositeEvaluator) and spec.aggregator.path:
        command = spec.aggregator.path
    else:
        return None
    return repr(command if len(command) <= 60 else command[:57] + "...")

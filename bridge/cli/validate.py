"""`evalrelay validate`: check eval files before spending anything on them."""

from __future__ import annotations

import contextlib
import resource
from collections.abc import Iterator
from pathlib import Path
from typing import Any, NamedTuple

import click

from evalrelay.bridge.cli.terminal import echo
from evalrelay.bridge.errors import Diagnostic, InvalidFileError, TargetError
from evalrelay.bridge.evalfile.cases import (
    NO_EVAL_FILES,
    LoadedEvalFile,
    Loc,
    eval_document,
    eval_files_under,
    load_document,
    load_eval_file,
    written_evaluators,
    written_judge_targets,
)
from evalrelay.bridge.evalfile.harbor.folder import TASK_FILE
from evalrelay.bridge.evalfile.limits import MIB, how_to_raise
from evalrelay.bridge.evalfile.project import Project
from evalrelay.bridge.evalfile.promptfoo.detect import PROMPTFOO_FORMAT
from evalrelay.bridge.evalfile.untrusted import Untrusted
from evalrelay.bridge.evalfile.yaml_source import YamlDocument
from evalrelay.bridge.planning.jobs import judge_of, needs_judge, no_judge
from evalrelay.bridge.targets.settings import batch_notes
from evalrelay.bridge.targets.targets_file import Targets


@click.command("validate")
@click.argument("paths", nargs=-1, required=True, type=click.Path(exists=True, path_type=Path))
@click.option(
    "--untrusted",
    is_flag=True,
    help="Check the files as the watcher checks dropped files: only what the allow-list "
    "lets a stranger's file do, files read from inside each folder named only; nothing in "
    "them runs. For checking files from people you do not trust (pull requests).",
)
def validate_command(paths: tuple[Path, ...], untrusted: bool) -> None:
    """Check eval files (or the YAML files in folders); report each error as path:line:column."""
    failed = 0
    files = [
        (path, Untrusted(inbox=_folder_of(path, paths)) if untrusted else None)
        for path in eval_files_under(paths)
    ]
    if not files:
        raise click.ClickException(NO_EVAL_FILES)
    for path, untrusted_file in files:
        checked = check_file(path, untrusted_file)
        for problem in checked.problems:
            echo(str(problem))
        failed += bool(checked.problems)
        if not checked.problems:
            count = checked.cases
            echo(f"{path}: {count} case{'s' if count != 1 else ''} OK ({checked.shape})")
        for note in checked.notes:
            echo(note.shown("note"))
    if failed:
        echo(f"{failed} of {len(files)} file{'s' if len(files) != 1 else ''} with errors", err=True)
        raise SystemExit(1)


class FileCheck(NamedTuple):
    cases: int
    problems: list[Diagnostic]
    notes: list[Diagnostic]
    """What the author should know though the file is valid: a target that is not defined
    (or cannot run) here, keys or evaluators read in part."""
    shape: str


def _folder_of(path: Path, named: tuple[Path, ...]) -> Path:
    """The folder an untrusted file may read from: the folder named that holds it, else
    its own folder."""
    folders = [
        p.resolve() for p in named if p.is_dir() and path.resolve().is_relative_to(p.resolve())
    ]
    return max(folders, key=lambda p: len(p.parts), default=path.resolve().parent)


def check_file(path: Path, untrusted: Untrusted | None = None) -> FileCheck:
    """The number of cases, every problem in one eval file, and the format it was read as.

    A target name the targets file lacks is a note, not a problem: like AgentV, the file
    is valid, and `run --target` chooses where it runs. So is a judge target it lacks, as
    AgentV resolves a judge only when it grades: `run` ends that evaluator's jobs as infra
    errors. An `untrusted` file is checked against the allow-list as a dropped file is, and
    names the operator's targets only: an unknown judge is a problem, as the inbox refuses
    the file."""
    derive = untrusted is None
    try:
        project = Project.containing(path)
        if untrusted:
            project = Project(project.root, project.config, untrusted=untrusted)
        with memory_limited(project.config.load_limits.memory_mb):
            loaded = load_eval_file(path, project)
        targets = Targets.load(project.root, path, derive=derive)
    except InvalidFileError as exc:
        judges = judges_of_invalid(path, untrusted)
        found = exc.diagnostics + (judges if untrusted else [])
        notes = [] if untrusted else resolved_late(judges)
        return FileCheck(0, sorted(found, key=lambda d: (d.line, d.column)), notes, "")
    except MemoryError:
        most = project.config.load_limits.memory_mb
        why = f"loading it needed more than {most} MB of memory; split the file, or "
        return FileCheck(
            0, [Diagnostic(path, 1, 1, why + how_to_raise("load_limits", "memory_mb"))], [], ""
        )
    if loaded.task is not None:  # a task.toml: its notes carry their own places
        return FileCheck(1, [], list(loaded.task.notes), loaded.format)
    doc = eval_document(path, project).document
    problems: list[Diagnostic] = []
    notes = [Diagnostic(path, 1, 1, note) for note in loaded.notes]
    if loaded.format == PROMPTFOO_FORMAT:
        # The translator (and the template engine it loads) only for promptfoo configs.
        from evalrelay.bridge.evalfile.promptfoo.config import read_differently

        written = load_document(path, project.config.load_limits)
        notes += [written.diagnostic(loc, why) for loc, why in read_differently(written)]
    for loc, name, case_id in target_references(loaded):
        try:
            targets.get(name)
        except TargetError as exc:
            hint = f"{exc}; run it with --target NAME, or define the target"
            notes.append(doc.diagnostic(loc, hint, case_id))
    for name, target in sorted(targets.by_name.items()):
        where = targets.path or path
        notes += [Diagnostic(where, 1, 1, note) for note in batch_notes(name, target.raw)]
    problems += missing_judges(loaded, targets, doc)
    judges = unknown_judges(targets, doc)
    if untrusted:
        problems += judges
    else:
        notes += resolved_late(judges)
    problems.sort(key=lambda d: (d.line, d.column))
    return FileCheck(len(loaded.cases), problems, notes, loaded.format)


@contextlib.contextmanager
def memory_limited(megabytes: int) -> Iterator[None]:
    """Bound this process's address space while a file loads, as the watcher bounds the
    process loading a file: a file that would fill the machine's memory ends as an error
    instead. The bound is lifted afterwards: the process may go on to other work (a test
    runner that invoked the command, a browser it starts)."""
    soft, hard = resource.getrlimit(resource.RLIMIT_AS)
    limit = megabytes * MIB
    if hard != resource.RLIM_INFINITY:
        limit = min(limit, hard)
    resource.setrlimit(resource.RLIMIT_AS, (limit, hard))
    try:
        yield
    finally:
        resource.setrlimit(resource.RLIMIT_AS, (soft, hard))


def missing_judges(loaded: LoadedEvalFile, targets: Targets, doc: YamlDocument) -> list[Diagnostic]:
    """A judging evaluator with no judge fails every job it is in: say so here, at the
    evaluator, when the file names its target (with `run --target` another may judge)."""
    file_targets = loaded.spec.target_names()
    case_targets = {case.id: case.case.target_names() or file_targets for case in loaded.cases}
    found = [(loc, e, case_id) for loc, e, case_id in written_evaluators(loaded.spec)]
    found += [
        (("evalcases", i, "rubrics"), rubric, case.id)
        for i, case in enumerate(loaded.cases)
        if (rubric := case.case.rubric_evaluator())
    ]
    problems = []
    project_judge = loaded.project.config.default_judge
    for loc, evaluator, case_id in found:
        for name in case_targets.get(case_id, file_targets) if case_id else file_targets:
            target = targets.by_name.get(name)
            if (
                target is None
                or not needs_judge(evaluator)
                or getattr(evaluator, "target", None)
                or judge_of(target, project_judge, judging=True)
            ):
                continue
            problems.append(doc.diagnostic(loc, no_judge(evaluator, target), case_id))
    return problems


def unknown_judges(targets: Targets, doc: YamlDocument) -> list[Diagnostic]:
    """Each judging evaluator whose `target:` is not a target here: no `run --target`
    chooses another one, so every job it is in ends as an infra error."""
    problems = []
    for loc, name, case_id in written_judge_targets(doc.data):
        try:
            targets.get(name)
        except TargetError as exc:
            problems.append(doc.diagnostic(loc, f"judge {exc}", case_id))
    return problems


def resolved_late(judges: list[Diagnostic]) -> list[Diagnostic]:
    """An operator's unknown judges as notes, saying what `run` does with them: one per
    place and judge, naming its case when only one case has it (a suite's evaluators are
    every case's)."""
    run_does = "; `run` ends its jobs as infra errors: define the target, or name another"
    cases: dict[tuple[Path, int, int, str], list[str | None]] = {}
    for judge in judges:
        cases.setdefault((judge.path, judge.line, judge.column, judge.message), []).append(
            judge.case_id
        )
    return [
        Diagnostic(path, line, column, message + run_does, ids[0] if len(ids) == 1 else None)
        for (path, line, column, message), ids in cases.items()
    ]


def judges_of_invalid(path: Path, untrusted: Untrusted | None = None) -> list[Diagnostic]:
    """The unknown judges of a file that failed to load, so one pass reports them with its
    other errors; nothing more when the file cannot even be read or its targets loaded."""
    if path.name == TASK_FILE:
        return []  # a task names no judge
    try:
        project = Project.containing(path)
        if untrusted:
            project = Project(project.root, project.config, untrusted=untrusted)
        doc = eval_document(path, project).document
        targets = Targets.load(project.root, path, derive=untrusted is None)
    except InvalidFileError:
        return []
    return unknown_judges(targets, doc)


def target_references(loaded: LoadedEvalFile) -> list[tuple[Loc, str, str | None]]:
    """Where the file names a target: its `target`, and each case's (or its `execution`'s
    `target` or `targets`)."""
    found: list[tuple[Loc, str, str | None]] = []
    places: list[tuple[Loc, Any, str | None]] = [((), loaded.spec, None)]
    places += [(("evalcases", i), c.case, c.id) for i, c in enumerate(loaded.cases)]
    for where, owner, case_id in places:
        execution = owner.execution
        # A case's own `target` wins over its `execution`; a file's `execution` wins.
        if owner.target and (case_id is not None or not (execution and execution.target_names())):
            found.append(((*where, "target"), owner.target, case_id))
        elif execution and execution.targets:
            found += [
                ((*where, "execution", "targets", j), name, case_id)
                for j, name in enumerate(execution.targets)
            ]
        elif execution and execution.target:
            found.append(((*where, "execution", "target"), execution.target, case_id))
    return found

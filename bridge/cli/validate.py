"""`evalrelay validate`: check eval files before spending anything on them."""

from __future__ import annotations

from pathlib import Path
from typing import NamedTuple

import click

from bridge.errors import Diagnostic, InvalidFileError, TargetError
from bridge.evalfile.cases import (
    LoadedEvalFile,
    Loc,
    eval_files_under,
    load_document,
    load_eval_file,
    written_evaluators,
)
from bridge.evalfile.project import Project
from bridge.evalfile.yaml_source import YamlDocument
from bridge.queue.jobs import judge_of, needs_judge, no_judge
from bridge.targets.targets_file import Targets


@click.command("validate")
@click.argument("paths", nargs=-1, required=True, type=click.Path(exists=True, path_type=Path))
def validate_command(paths: tuple[Path, ...]) -> None:
    """Check eval files (or the YAML files in folders); report each error as path:line:column."""
    files = eval_files_under(paths)
    if not files:
        raise click.ClickException("no .yaml or .yml files found in the paths given")
    failed = 0
    for path in files:
        checked = check_file(path)
        for problem in checked.problems:
            click.echo(str(problem))
        failed += bool(checked.problems)
        if not checked.problems:
            count = checked.cases
            click.echo(f"{path}: {count} case{'s' if count != 1 else ''} OK ({checked.shape})")
        for note in checked.notes:
            click.echo(note.shown("note"))
    if failed:
        click.echo(
            f"{failed} of {len(files)} file{'s' if len(files) != 1 else ''} with errors", err=True
        )
        raise SystemExit(1)


class FileCheck(NamedTuple):
    cases: int
    problems: list[Diagnostic]
    notes: list[Diagnostic]
    """What the author should know though the file is valid: a target that is not defined
    (or cannot run) here, keys or evaluators read in part."""
    shape: str


def check_file(path: Path) -> FileCheck:
    """The number of cases, every problem in one eval file, and the format it was read as.

    A target name the targets file lacks is a note, not a problem: like AgentV, the file
    is valid, and `run --target` chooses where it runs."""
    try:
        project = Project.containing(path)
        loaded = load_eval_file(path, project)
        targets = Targets.load(project.root, path)
    except InvalidFileError as exc:
        return FileCheck(0, exc.diagnostics, [], "")
    doc = load_document(path)
    problems: list[Diagnostic] = []
    notes = [Diagnostic(path, 1, 1, note) for note in loaded.notes]
    for loc, name, case_id in target_references(loaded):
        try:
            targets.get(name)
        except TargetError as exc:
            hint = f"{exc}; run it with --target NAME, or define the target"
            notes.append(doc.diagnostic(loc, hint, case_id))
    problems += missing_judges(loaded, targets, doc)
    problems.sort(key=lambda d: (d.line, d.column))
    return FileCheck(len(loaded.cases), problems, notes, loaded.format)


def missing_judges(loaded: LoadedEvalFile, targets: Targets, doc: YamlDocument) -> list[Diagnostic]:
    """A judging evaluator with no judge fails every job it is in: say so here, at the
    evaluator, when the file names its target (with `run --target` another may judge)."""
    file_target = loaded.spec.target_name()
    case_targets = {case.id: case.case.target_name() or file_target for case in loaded.cases}
    found = [(loc, e, case_id) for loc, e, case_id in written_evaluators(loaded.spec)]
    found += [
        (("evalcases", i, "rubrics"), rubric, case.id)
        for i, case in enumerate(loaded.cases)
        if (rubric := case.case.rubric_evaluator())
    ]
    problems = []
    project_judge = loaded.project.config.default_judge
    for loc, evaluator, case_id in found:
        name = case_targets.get(case_id) if case_id else file_target
        target = targets.by_name.get(name) if name else None
        if (
            target is None
            or not needs_judge(evaluator)
            or getattr(evaluator, "target", None)
            or judge_of(target, project_judge, judging=True)
        ):
            continue
        problems.append(doc.diagnostic(loc, no_judge(evaluator, target), case_id))
    return problems


def target_references(loaded: LoadedEvalFile) -> list[tuple[Loc, str, str | None]]:
    """Where the file names a target: its `target`, and each case's (or its `execution`'s)."""
    found: list[tuple[Loc, str, str | None]] = []
    spec = loaded.spec
    if spec.execution and spec.execution.target:
        found.append((("execution", "target"), spec.execution.target, None))
    elif spec.target:
        found.append((("target",), spec.target, None))
    for i, case in enumerate(loaded.cases):
        if case.case.target:
            found.append((("evalcases", i, "target"), case.case.target, case.id))
        elif case.case.execution and case.case.execution.target:
            found.append(
                (("evalcases", i, "execution", "target"), case.case.execution.target, case.id)
            )
    return found

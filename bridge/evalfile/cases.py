"""Loading eval files: parse, validate, resolve attached files, and report every error at once.

A file with any error is rejected whole; each error names the file, line, column and case.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any, NamedTuple

from pydantic import BaseModel, TypeAdapter, ValidationError

from evalrelay.bridge.errors import Diagnostic, EvalrelayError, InvalidFileError
from evalrelay.bridge.evalfile.agentv_ts.loader import FORMAT as TYPESCRIPT_FORMAT
from evalrelay.bridge.evalfile.agentv_ts.loader import SUFFIXES as TYPESCRIPT_SUFFIXES
from evalrelay.bridge.evalfile.agentv_ts.loader import is_typescript_eval, load_typescript_eval
from evalrelay.bridge.evalfile.evaluators import (
    EvaluatorSpec,
    LlmJudgeEvaluator,
    UnsupportedEvaluator,
    all_evaluators,
    located_evaluators,
)
from evalrelay.bridge.evalfile.files import FileRefError, resolve_file
from evalrelay.bridge.evalfile.harbor.folder import (
    TASK_FILE,
    LoadedTask,
    dataset_of,
    is_task_folder,
    load_task,
)
from evalrelay.bridge.evalfile.limits import LoadLimits
from evalrelay.bridge.evalfile.project import Project
from evalrelay.bridge.evalfile.promptfoo.detect import PROMPTFOO_FORMAT, is_promptfoo
from evalrelay.bridge.evalfile.resolved import (
    ResolvedFile,
    ResolvedMessage,
    Text,
    has_something_to_send,
)
from evalrelay.bridge.evalfile.schema import (
    AssistantMessage,
    EvalCase,
    EvalFile,
    FileSegment,
    ToolMessage,
)
from evalrelay.bridge.evalfile.tools import (
    ToolChoice,
    ToolDefinition,
    ToolList,
    choice_problem,
    merged_tools,
)
from evalrelay.bridge.evalfile.untrusted import Untrusted, raw_problems, spec_problems
from evalrelay.bridge.evalfile.validation import diagnostics
from evalrelay.bridge.evalfile.yaml_source import YamlDocument, load_yaml, read_yaml_text
from evalrelay.bridge.gc_pause import gc_paused

EVAL_SUFFIXES = (".yaml", ".yml")
EVAL_NAME_ENDINGS = (*EVAL_SUFFIXES, *TYPESCRIPT_SUFFIXES)
"""How an eval file's name ends: YAML, or an AgentV TypeScript suite (`x.eval.ts`)."""
SUITE_FORMAT = "AgentV suite (tests, prompts, assert)"
NOT_EVAL_FILES = frozenset({"evalrelay.yaml", "targets.yaml", "targets.yml"})
"""Project files that a folder scan passes over."""
MESSAGE_LISTS = ("input_messages", "expected_messages")

Loc = tuple[str | int, ...]


class LoadedCase(NamedTuple):
    case: EvalCase
    messages: list[ResolvedMessage]
    expected: list[ResolvedMessage]
    system_prompt: str | None
    tools: tuple[ToolDefinition, ...] = ()
    """The file's tools and the case's, merged (see `merged_tools`)."""
    tool_choice: ToolChoice | None = None
    """The case's, else the file's."""

    @property
    def id(self) -> str:
        return self.case.id

    def files(self) -> list[ResolvedFile]:
        """Every attached file of the input, each once, in order of first appearance."""
        found: dict[str, ResolvedFile] = {}
        for message in self.messages:
            for part in message.parts:
                if isinstance(part, ResolvedFile):
                    found.setdefault(part.project_path, part)
        return list(found.values())


class LoadedEvalFile(NamedTuple):
    path: Path
    project: Project
    spec: EvalFile
    cases: list[LoadedCase]
    notes: tuple[str, ...] = ()
    """What `validate` should tell the author: keys read in part or not at all."""
    written_as: str | None = None
    task: LoadedTask | None = None
    """A Harbor task folder (`path` is its task.toml): its one case is the task."""

    @property
    def format(self) -> str:
        """Which shape of eval file this is, in words, for `validate`."""
        if self.written_as:
            return self.written_as
        if self.spec.schema_ == "agentv-eval-v2":
            return "AgentV agentv-eval-v2"
        if self.spec.execution is not None or any(
            c.case.execution or c.case.expected_outcome for c in self.cases
        ):
            return "AgentV evalcases with execution blocks"
        return "evalcases"

    @property
    def dataset(self) -> str:
        return self.spec.dataset or self.path.stem


@gc_paused()
def load_eval_file(path: Path, project: Project | None = None) -> LoadedEvalFile:
    """Load one eval file, or raise InvalidFileError with all of its problems."""
    project = project or Project.containing(path)
    if path.name == TASK_FILE:
        return load_task_file(path, project)
    doc, notes, written_as = eval_document(path, project)
    _refuse_other_formats(doc)
    problems, files = _check_raw(doc, project)
    try:
        spec = EvalFile.model_validate(doc.data)
    except ValidationError as exc:
        problems += diagnostics(EvalFile, exc, doc, lambda loc: _case_id(doc.data, loc))
        problems += _check_cases(doc, list(_valid_cases(doc, files)))
        raise InvalidFileError(_sorted(problems)) from None
    if project.untrusted:
        problems += spec_problems(doc, spec, project.untrusted)
    if problems:
        problems += _check_cases(doc, list(_valid_cases(doc, files)))
        raise InvalidFileError(_sorted(problems))
    cases = [_load_case(spec, i, case, files) for i, case in enumerate(spec.evalcases)]
    problems = _check_cases(doc, list(enumerate(cases)))
    problems += _check_judge_prompts(doc, spec, path.parent, project)
    if problems:
        raise InvalidFileError(_sorted(problems))
    notes += _unsupported_evaluators(spec, cases)
    return LoadedEvalFile(path, project, spec, cases, tuple(notes), written_as)


class EvalDocument(NamedTuple):
    document: YamlDocument
    """As an `evalcases` document, whatever the format it was written in."""
    notes: list[str]
    written_as: str | None


def eval_document(path: Path, project: Project) -> EvalDocument:
    """The file read as an `evalcases` document, whose places lead back to the file's lines:
    what the loader validates, and what places an error found after loading. An untrusted
    file is checked against the allow-list as written first, so nothing it names runs."""
    typescript = is_typescript_eval(path)
    if typescript:
        doc = load_typescript_eval(path, project)
    else:
        doc = load_document(path, project.config.load_limits)
    if project.untrusted:
        _refuse_untrusted(doc, path, project.untrusted, typescript)
    if isinstance(doc.data, dict) and "evalcases" in doc.data:
        # Already an `evalcases` document: the translators (and the template engine they
        # load, a tenth of a second) are imported only for the files that need them.
        return EvalDocument(doc, [], _plain_format(path))
    from evalrelay.bridge.evalfile.suite_format import is_suite, translate_suite

    if not typescript and is_promptfoo(path, doc.data):
        from evalrelay.bridge.evalfile.promptfoo.config import translate_promptfoo

        doc, notes = translate_promptfoo(doc, project)
        return EvalDocument(doc, notes, PROMPTFOO_FORMAT)
    if is_suite(doc.data):
        doc, notes = translate_suite(doc, project)
        return EvalDocument(doc, notes, TYPESCRIPT_FORMAT if typescript else SUITE_FORMAT)
    if typescript:
        raise InvalidFileError(
            [
                Diagnostic(
                    path,
                    1,
                    1,
                    "the default export has no `tests`: an AgentV suite needs `tests` (a list "
                    "of {id, vars, assert}) to run",
                )
            ]
        )
    return EvalDocument(doc, [], _plain_format(path))


def _plain_format(path: Path) -> str | None:
    return "AgentV JSONL dataset" if path.suffix == ".jsonl" else None


def _refuse_untrusted(
    doc: YamlDocument, path: Path, untrusted: Untrusted, typescript: bool = False
) -> None:
    from evalrelay.bridge.evalfile.suite_format import is_suite

    promptfoo = not typescript and is_promptfoo(path, doc.data)
    shape = "promptfoo" if promptfoo else "suite" if is_suite(doc.data) else None
    problems = raw_problems(doc, shape, untrusted) if shape else []
    if problems:
        raise InvalidFileError(_sorted(problems))


HARBOR_FORMAT = "Harbor task (task.toml)"


def load_task_file(path: Path, project: Project) -> LoadedEvalFile:
    """A Harbor task folder as an eval file of one case, the task: its instruction is
    the case's input, for `render` and the results' request; the job carries the task."""
    task = load_task(path.parent)
    instruction = "\n\n".join(task.instructions)
    case = EvalCase(
        id=task.spec.name,
        input_messages=[{"role": "user", "content": instruction}],
        metadata=dict(task.spec.config.metadata),
    )
    spec = EvalFile(dataset=dataset_of(path.parent), evalcases=[case])
    loaded = LoadedCase(case, [ResolvedMessage("user", [Text(instruction)])], [], None)
    notes = tuple(str(note) for note in task.notes)
    return LoadedEvalFile(path, project, spec, [loaded], notes, HARBOR_FORMAT, task)


def _unsupported_evaluators(spec: EvalFile, cases: list[LoadedCase]) -> list[str]:
    """One note per evaluator evalrelay cannot run, naming the cases that will end as
    infra errors because of it."""
    users: dict[tuple[str, str], list[str]] = {}
    for case in cases:
        specs = case.case.evaluator_specs()
        turns = [e for turn in case.case.turns or [] for e in turn.evaluators or []]
        for evaluator in all_evaluators(
            [*(specs if specs is not None else spec.evaluator_specs() or []), *turns]
        ):
            if isinstance(evaluator, UnsupportedEvaluator):
                key = (evaluator.name or evaluator.written_type, evaluator.why)
                users.setdefault(key, []).append(case.id)
    notes = []
    for (name, why), ids in users.items():
        shown = ", ".join(ids[:3]) + (f" and {len(ids) - 3} more" if len(ids) > 3 else "")
        notes.append(
            f"evaluator {name} cannot run here ({why}): cases {shown} will end as infra_error"
        )
    return notes


def load_document(path: Path, limits: LoadLimits | None = None) -> YamlDocument:
    """An eval file's data as written: YAML, or a JSONL dataset with its YAML sidecar;
    refused early when over `limits` (its size, its number of cases)."""
    if path.suffix == ".jsonl":
        return load_jsonl_dataset(path, limits)
    return load_yaml(path, limits=limits)


def load_jsonl_dataset(path: Path, limits: LoadLimits | None = None) -> YamlDocument:
    """AgentV's JSONL dataset: one case per line, and `<name>.yaml` beside it for the
    file's `description`, `dataset`, `execution` and `evaluator`. Each line is read as a
    YAML flow mapping, so an error still names its line and column."""
    text = read_yaml_text(path, limits)
    listed = "\n".join(f"- {line}" if line.strip() else "" for line in text.splitlines())
    lines = load_yaml(path, listed or "[]", limits=limits)
    sidecar_path = path.with_suffix(".yaml")
    sidecar = load_yaml(sidecar_path).data if sidecar_path.is_file() else None
    data = {**(sidecar if isinstance(sidecar, dict) else {}), "evalcases": lines.data or []}
    return lines._replace(data=data, origin={("evalcases",): ()})


def _refuse_other_formats(doc: YamlDocument) -> None:
    """One clear error for a file that is no eval file at all, instead of an unknown-key
    error for each of its keys."""
    if isinstance(doc.data, dict) and "evalcases" not in doc.data and "prompts" in doc.data:
        raise InvalidFileError(
            [
                doc.diagnostic(
                    ("prompts",),
                    "this file has `prompts` but no `tests`: an AgentV suite needs `tests` "
                    "(a list of {id, vars, assert}) to run",
                    key=True,
                )
            ]
        )


def load_eval_files(paths: Sequence[Path]) -> list[LoadedEvalFile]:
    """Every eval file named or found under `paths` (`eval_files_under`), or one error
    listing every problem in all of them."""
    files, problems = [], []
    for path in eval_files_under(paths):
        try:
            files.append(load_eval_file(path))
        except InvalidFileError as exc:
            problems += exc.diagnostics
    if problems:
        raise InvalidFileError(problems)
    if not files:
        raise EvalrelayError(NO_EVAL_FILES)
    return files


NO_EVAL_FILES = (
    "no .yaml, .yml or .eval.ts eval files (or task folders, holding task.toml) found in the "
    "paths given"
)


def eval_files_under(paths: Sequence[Path]) -> list[Path]:
    """The files named, and the eval files found (sorted) in the folders named. A folder
    holding task.toml is a Harbor task: its task.toml stands for it, and nothing under
    it is an eval file (its environment may hold YAML of its own)."""
    found: list[Path] = []
    for path in paths:
        if path.is_dir():
            found += _found_in(path, path)
        else:
            found.append(path)
    return found


def _found_in(folder: Path, top: Path) -> list[Path]:
    if is_task_folder(folder):
        return [folder / TASK_FILE]
    found: list[Path] = []
    for entry in sorted(folder.iterdir()):
        if entry.name.startswith("."):
            continue
        if entry.is_dir():
            found += _found_in(entry, top)
        elif _is_eval_file(entry, top):
            found.append(entry)
    return found


def _is_eval_file(path: Path, folder: Path) -> bool:
    hidden = any(part.startswith(".") for part in path.relative_to(folder).parts)
    return (
        (path.suffix in EVAL_SUFFIXES or is_typescript_eval(path))
        and path.name not in NOT_EVAL_FILES
        and not hidden
        and path.is_file()
    )


def _check_raw(
    doc: YamlDocument, project: Project
) -> tuple[list[Diagnostic], dict[Loc, ResolvedFile]]:
    """Checks that need no valid schema: file references and duplicate ids."""
    problems: list[Diagnostic] = []
    files: dict[Loc, ResolvedFile] = {}
    for loc, value in _file_segments(doc.data):
        try:
            files[loc] = resolve_file(value, doc.path, project)
        except FileRefError as exc:
            problems.append(doc.diagnostic((*loc, "value"), str(exc), _case_id(doc.data, loc)))
    seen: set[str] = set()
    for index, raw in _raw_cases(doc.data):
        case_id = raw.get("id")
        if isinstance(case_id, (str, int)) and str(case_id) in seen:
            problems.append(
                doc.diagnostic(
                    ("evalcases", index, "id"),
                    f"duplicate case id '{case_id}'; ids must be unique in a file",
                    str(case_id),
                )
            )
        if isinstance(case_id, (str, int)):
            seen.add(str(case_id))
    return problems, files


def _raw_cases(data: Any) -> Iterator[tuple[int, dict[str, Any]]]:
    cases = data.get("evalcases") if isinstance(data, dict) else None
    if isinstance(cases, list):
        for index, raw in enumerate(cases):
            if isinstance(raw, dict):
                yield index, raw


def _file_segments(data: Any) -> Iterator[tuple[Loc, str]]:
    for index, raw in _raw_cases(data):
        for field in MESSAGE_LISTS:
            messages = raw.get(field)
            for m, message in enumerate(messages if isinstance(messages, list) else []):
                content = message.get("content") if isinstance(message, dict) else None
                for s, segment in enumerate(content if isinstance(content, list) else []):
                    if (
                        isinstance(segment, dict)
                        and segment.get("type") == "file"
                        and isinstance(segment.get("value"), str)
                        and segment["value"]
                    ):
                        yield ("evalcases", index, field, m, "content", s), segment["value"]


def _case_id(data: Any, loc: Sequence[str | int]) -> str | None:
    if len(loc) < 2 or loc[0] != "evalcases" or not isinstance(loc[1], int):
        return None
    cases = dict(_raw_cases(data))
    case_id = cases.get(loc[1], {}).get("id")
    return str(case_id) if isinstance(case_id, (str, int)) else f"#{loc[1] + 1}"


def _load_case(
    spec: EvalFile, index: int, case: EvalCase, files: dict[Loc, ResolvedFile]
) -> LoadedCase:
    def resolved(field: str) -> list[ResolvedMessage]:
        out = []
        for m, message in enumerate(getattr(case, field)):
            parts = [
                files[("evalcases", index, field, m, "content", s)]
                if isinstance(seg, FileSegment)
                else Text(seg.value)
                for s, seg in enumerate(message.content)
            ]
            # isinstance, not getattr with a default: pydantic's fallback for a missing
            # attribute is slow enough to show on a file of 100,000 cases.
            asked = message.tool_calls if isinstance(message, AssistantMessage) else ()
            calls = [
                call if call.id else call.model_copy(update={"id": f"call_{m + 1}_{n + 1}"})
                for n, call in enumerate(asked)
            ]
            answers = message.tool_call_id if isinstance(message, ToolMessage) else None
            out.append(ResolvedMessage(message.role, parts, calls, answers))
        return out

    return LoadedCase(
        case,
        resolved("input_messages"),
        resolved("expected_messages"),
        case.system_prompt or spec.system_prompt,
        tuple(merged_tools(spec.tools, case.tools)),
        case.tool_choice if case.tool_choice is not None else spec.tool_choice,
    )


def _valid_cases(
    doc: YamlDocument, files: dict[Loc, ResolvedFile]
) -> Iterator[tuple[int, LoadedCase]]:
    """The cases of a file that failed as a whole which are valid on their own (and whose
    files resolved), so their own problems are reported in the same pass."""
    spec, tools_known = _file_defaults(doc.data)
    for index, raw in _raw_cases(doc.data):
        try:
            case = EvalCase.model_validate(raw)
        except ValidationError:
            continue
        try:
            loaded = _load_case(spec, index, case, files)
        except KeyError:
            continue  # a file it attaches did not resolve: reported already
        # With the file's own tools in error, a choice naming one of them cannot be judged.
        yield index, loaded if tools_known else loaded._replace(tool_choice=None)


def _file_defaults(data: Any) -> tuple[EvalFile, bool]:
    """What cases take from a file that failed as a whole: its tools, where they are valid
    (and whether they were), so a case's tool_choice is checked against the right set."""
    written = data if isinstance(data, dict) else {}
    try:
        valid = _FileToolDefaults.model_validate(written)
    except ValidationError:
        return EvalFile.model_construct(evalcases=[], system_prompt=None), False
    return EvalFile.model_construct(
        evalcases=[], system_prompt=None, tools=valid.tools, tool_choice=valid.tool_choice
    ), True


class _FileToolDefaults(BaseModel):
    tools: ToolList | None = None
    tool_choice: ToolChoice | None = None


def _check_cases(doc: YamlDocument, cases: list[tuple[int, LoadedCase]]) -> list[Diagnostic]:
    """Checks on the meaning of valid cases: something to send, tool outputs with their calls."""
    problems = []
    for index, loaded in cases:
        loc: Loc = ("evalcases", index, "input_messages")
        if not has_something_to_send(loaded.messages):
            problems.append(
                doc.diagnostic(
                    loc, "input_messages has nothing to send: every message is empty", loaded.id
                )
            )
        call_ids: set[str] = set()
        for m, message in enumerate(loaded.messages):
            call_ids.update(call.id for call in message.tool_calls if call.id)
            if message.tool_call_id is not None and message.tool_call_id not in call_ids:
                problems.append(
                    doc.diagnostic(
                        (*loc, m, "tool_call_id"),
                        f"tool_call_id '{message.tool_call_id}' matches no tool call of an earlier "
                        "assistant message; add the call or drop the id",
                        loaded.id,
                    )
                )
        problem = choice_problem(loaded.tool_choice, loaded.tools)
        if problem:
            written = loaded.case.tool_choice is not None
            where: Loc = ("evalcases", index, "tool_choice") if written else ("tool_choice",)
            problems.append(doc.diagnostic(where, problem, loaded.id))
    return problems


def written_evaluators(spec: EvalFile) -> list[tuple[Loc, EvaluatorSpec, str | None]]:
    """Every evaluator entry as written (file level, each case, composite members), with
    its place and its case's id."""
    lists: list[tuple[Loc, list[EvaluatorSpec] | None, str | None]] = [
        (("evaluators",), spec.evaluators, None),
        (("execution", "evaluators"), spec.execution.evaluators if spec.execution else None, None),
    ]
    for i, case in enumerate(spec.evalcases):
        execution = case.execution.evaluators if case.execution else None
        lists += [
            (("evalcases", i, "evaluators"), case.evaluators, case.id),
            (("evalcases", i, "execution", "evaluators"), execution, case.id),
        ]
        lists += [
            (("evalcases", i, "turns", k, "evaluators"), turn.evaluators, case.id)
            for k, turn in enumerate(case.turns or [])
        ]
    return [
        (loc, evaluator, case_id)
        for where, specs, case_id in lists
        for loc, evaluator in located_evaluators(specs or [], where)
    ]


def written_judge_targets(data: Any) -> list[tuple[Loc, str, str | None]]:
    """Each judge `target:` written in a file's data, with its place and its case's id,
    from every evaluator entry that is valid on its own: so `validate` can check them in the
    same pass as a file's other errors, even when the file as a whole failed."""
    written = data if isinstance(data, dict) else {}
    lists: list[tuple[Loc, Any, str | None]] = [
        (("evaluators",), written.get("evaluators"), None),
        (("execution", "evaluators"), _mapping(written.get("execution")).get("evaluators"), None),
    ]
    for index, raw in _raw_cases(written):
        case_id = raw.get("id") if isinstance(raw.get("id"), str) else None
        execution = _mapping(raw.get("execution")).get("evaluators")
        lists += [
            (("evalcases", index, "evaluators"), raw.get("evaluators"), case_id),
            (("evalcases", index, "execution", "evaluators"), execution, case_id),
        ]
        turns = raw.get("turns")
        lists += [
            (
                ("evalcases", index, "turns", k, "evaluators"),
                _mapping(turn).get("evaluators"),
                case_id,
            )
            for k, turn in enumerate(turns if isinstance(turns, list) else [])
        ]
    found = []
    for where, entries, case_id in lists:
        for i, entry in enumerate(entries if isinstance(entries, list) else []):
            try:
                evaluator = _EVALUATOR.validate_python(entry)
            except ValidationError:
                continue  # reported with the file's other errors
            for loc, member in located_evaluators([evaluator], (*where,)):
                name = getattr(member, "target", None)
                if isinstance(name, str):
                    found.append(((*where, i, *loc[len(where) + 1 :], "target"), name, case_id))
    return found


_EVALUATOR: TypeAdapter[EvaluatorSpec] = TypeAdapter(EvaluatorSpec)


def _mapping(value: Any) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def _check_judge_prompts(
    doc: YamlDocument, spec: EvalFile, folder: Path, project: Project
) -> list[Diagnostic]:
    """A judge prompt file must be there now, not when the campaign is planned."""
    problems = []
    root = project.root
    for loc, evaluator, case_id in written_evaluators(spec):
        name = evaluator.prompt_file() if isinstance(evaluator, LlmJudgeEvaluator) else None
        if name is None:
            continue
        path = folder / name
        if project.untrusted and not path.resolve().is_relative_to(project.files_root):
            why = project.outside(f"judge prompt file {name}", path.resolve())
        elif not path.resolve().is_relative_to(root.resolve()):
            why = f"judge prompt file {name} is outside the project ({root}); move it inside"
        elif not path.is_file():
            why = (
                f"judge prompt file {name} not found (looked for {path.resolve()}); create "
                "it or write the prompt inline"
            )
        else:
            continue
        problems.append(doc.diagnostic((*loc, "prompt"), why, case_id))
    return problems


def _sorted(problems: list[Diagnostic]) -> list[Diagnostic]:
    return sorted(set(problems), key=lambda d: (d.line, d.column, d.message))

"""AgentV's July 2026 suite format (`prompts`, `providers`, `tests` with `vars` and
`assert`), rewritten as an `evalcases` document so one loader, one prompt builder and one
grader serve both formats.

The rewrite keeps a map from each place in the new document to the place in the file it
came from, so an error still names the line and column the author wrote. Templates are
Nunjucks in AgentV; Jinja reads the same `{{ name }}`, `{{ vars.a.b }}` and filters.
"""

from __future__ import annotations

import copy
import json
import os
import re
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path
from typing import Any, NamedTuple, Protocol, runtime_checkable

from jinja2 import TemplateError

from evalrelay.bridge.errors import Diagnostic, InvalidFileError
from evalrelay.bridge.evalfile.assertions import to_evaluators
from evalrelay.bridge.evalfile.bounded_templates import Budget, TemplateLimitError
from evalrelay.bridge.evalfile.csv_tests import CsvTestsError, read_csv_tests
from evalrelay.bridge.evalfile.files import FileRefError, resolve_file
from evalrelay.bridge.evalfile.limits import how_to_raise
from evalrelay.bridge.evalfile.project import CONFIG_NAME, Project
from evalrelay.bridge.evalfile.scenarios import scenario_tests
from evalrelay.bridge.evalfile.untrusted import tests_file_problems
from evalrelay.bridge.evalfile.yaml_source import Loc, YamlDocument, load_yaml

SUITE_KEYS = ("tests", "scenarios")
NOTED_KEYS = {
    "extensions": "AgentV's lifecycle hooks are not run by evalrelay",
    "workspace": "workspace hooks are not run by evalrelay; prepare the workspace yourself",
    "evaluate_options": "evalrelay reads only `repeat` and `timeout_ms` from evaluate_options",
    "nunjucks_filters": "custom Nunjucks filters (JavaScript) are not available",
    "input_files": "suite-level input_files are attached to string inputs only",
}
"""Top-level keys evalrelay reads in part or not at all: `validate` says so, never silently."""
METADATA_KEYS = ("version", "author", "license", "category", "requires")
WHOLE_TEMPLATE = re.compile(r"^\s*\{\{\s*([A-Za-z_][\w.]*)\s*\}\}\s*$")
SECRET_NAME = re.compile(r"KEY|TOKEN|SECRET|PASSWORD|CREDENTIAL", re.IGNORECASE)
CREDENTIALS = re.compile(r"://[^/\s@]*:[^/\s@]+@")
"""A URL with a password in it (`redis://:pw@host`, `postgres://user:pw@db`)."""


def is_suite(data: Any) -> bool:
    return isinstance(data, dict) and "evalcases" not in data and any(k in data for k in SUITE_KEYS)


@runtime_checkable
class PromptBuilder(Protocol):
    """A prompt written as code (promptfoo's prompt functions): the prompt for one test's
    vars, a text or a message list, still rendered as a template after; ValueError when
    it cannot be made, saying why."""

    def build(self, vars_: dict[str, Any]) -> Any: ...


class SuiteDocument(NamedTuple):
    document: YamlDocument
    notes: list[str]


class _PublicEnv(Mapping[str, str]):
    """The submitting machine's environment for `{{ env.NAME }}`, holding names and no
    object a template could call. Whatever a prompt holds travels in every job and the
    request to the vendor, so no file reads a secret: a name like one (`..._KEY`,
    `..._TOKEN`), evalrelay's own settings (`EVALRELAY_*`, the Redis URL), or a URL with
    a password in it. Beyond that a trusted file (the operator's) reads any variable by
    name, and an untrusted one only those the project lists in `template_env`. A loop
    over `env` sees the listed ones only."""

    def __init__(self, project: Project) -> None:
        self._listed = frozenset(project.config.template_env)
        self._any = project.untrusted is None
        self._config = str(project.root / CONFIG_NAME)

    def __getitem__(self, name: str) -> str:
        if SECRET_NAME.search(name) or name.startswith("EVALRELAY_"):
            raise TemplateError(
                f"env.{name} looks like a secret and would be sent in every job; "
                "secrets belong in targets, read by the workers"
            )
        if not self._any and name not in self._listed:
            raise TemplateError(
                f"env.{name} is not listed in `template_env` in {self._config}; a dropped "
                "file's templates see only the environment variables listed there: add it "
                "to the list to use it"
            )
        value = os.environ[name]
        if CREDENTIALS.search(value):
            raise TemplateError(
                f"env.{name} holds a URL with a password and would be sent in every job; "
                "secrets belong in targets, read by the workers"
            )
        return value

    def __contains__(self, name: object) -> bool:
        return (
            name in self._listed
            and isinstance(name, str)
            and name in os.environ
            and not SECRET_NAME.search(name)
            and not name.startswith("EVALRELAY_")
            and not CREDENTIALS.search(os.environ[name])
        )

    def __iter__(self) -> Iterator[str]:
        return iter(k for k in sorted(self._listed) if k in self)

    def __len__(self) -> int:
        return sum(1 for _ in self)


class _Translation:
    def __init__(self, doc: YamlDocument, project: Project) -> None:
        self.doc = doc
        self.project = project
        self.data: dict[str, Any] = doc.data
        self.origin: dict[Loc, Loc] = {}
        self.problems: list[Diagnostic] = []
        self.notes: list[str] = []
        self.budget = Budget(project.config.template_limits)
        self.env = _PublicEnv(project)
        self.adapt_asserts: Callable[[Any, dict[str, Any]], Any] | None = None

    def fail(self, loc: Loc, message: str, case: str | None = None) -> None:
        self.problems.append(self.doc.diagnostic(loc, message, case))

    def read(self, reference: str, loc: Loc) -> str | None:
        """A file the suite names (`file://`), found and bounded as attached files are:
        inside the project, symlinks included."""
        try:
            return resolve_file(reference.removeprefix("file://"), self.doc.path, self.project).text
        except FileRefError as exc:
            self.fail(loc, str(exc))
            return None

    def inside(self, path: Path, loc: Loc) -> bool:
        if path.resolve().is_relative_to(self.project.files_root):
            return True
        if self.project.untrusted:
            self.fail(loc, self.project.outside(str(path), path.resolve()))
        else:
            self.fail(
                loc, f"{path} is outside the project root {self.project.root}; move it inside"
            )
        return False

    def render(self, value: Any, context: dict[str, Any], loc: Loc) -> Any:
        """Strings rendered with `context`; a string that is one `{{ path }}` becomes the
        value there (a message list stays a list), as AgentV does it."""
        if isinstance(value, str):
            whole = WHOLE_TEMPLATE.match(value)
            if whole:
                found = _lookup(context, whole.group(1))
                if found is not _MISSING:
                    return copy.deepcopy(found)
            if "{{" not in value and "{%" not in value:
                return value
            try:
                return self.budget.render(value, context)
            except TemplateLimitError as exc:
                # Stop here: every other template of the file would spend the same again.
                self.fail(loc, f"template stopped: {exc}")
                raise InvalidFileError(self.sorted_problems()) from None
            except TemplateError as exc:
                self.fail(loc, f"template error: {exc}; fix the {{{{ }}}} expression")
                return value
            except RecursionError:
                self.fail(loc, "template error: macros call each other too deeply; fix the "
                          "template")  # fmt: skip
                return value
            except MemoryError:
                raise  # the process's own limit: its loader says so
            except Exception as exc:  # Python's own errors: 1/0, int("x"), overflow
                self.fail(loc, f"template error: {type(exc).__name__}: {exc}; fix the "
                          "{{ }} expression")  # fmt: skip
                return value
        if isinstance(value, list):
            return [self.render(v, context, (*loc, i)) for i, v in enumerate(value)]
        if isinstance(value, dict):
            return {k: self.render(v, context, (*loc, k)) for k, v in value.items()}
        return value

    def sorted_problems(self) -> list[Diagnostic]:
        return sorted(set(self.problems), key=lambda d: (d.line, d.column))


_MISSING = object()


def _lookup(context: Mapping[str, Any], path: str) -> Any:
    value: Any = context
    for part in path.split("."):
        if isinstance(value, Mapping) and part in value:
            value = value[part]
        else:
            return _MISSING
    return value


def translate_suite(
    doc: YamlDocument,
    project: Project,
    derive_ids: bool = False,
    adapt_asserts: Callable[[Any, dict[str, Any]], Any] | None = None,
) -> SuiteDocument:
    """The suite as an `evalcases` document (positions mapped back), or InvalidFileError.

    `derive_ids`: a test without `id` is named from its place and description, as
    promptfoo's tests have no ids (AgentV's must have one). `adapt_asserts`: rewrites each
    assert list (a test's, read from a file too, the default test's) before its templates
    are rendered, given the test's `options` (over the default test's): a dialect's own
    assertion types and answer transforms."""
    t = _Translation(doc, project)
    t.adapt_asserts = adapt_asserts
    data = t.data
    for key, why in NOTED_KEYS.items():
        if key in data:
            t.notes.append(f"{key}: {why}")
    out: dict[str, Any] = {}
    if isinstance(data.get("name"), str):
        out["dataset"] = data["name"]
    if isinstance(data.get("description"), str):
        out["description"] = data["description"]
    if "threshold" in data:
        out["threshold"] = data["threshold"]
        t.origin[("threshold",)] = ("threshold",)
    default_test = _default_test(t)
    if "threshold" in default_test:
        out["threshold"] = default_test["threshold"]
    options = data.get("evaluate_options") or {}
    if isinstance(options, dict) and isinstance(options.get("repeat"), int):
        out["repeats"] = options["repeat"]
    if isinstance(options, dict) and isinstance(options.get("timeout_ms"), (int, float)):
        out["timeout_seconds"] = options["timeout_ms"] / 1000
    providers = _providers(t)
    prompts = _prompts(t)
    suite_metadata = _suite_metadata(data)
    cases: list[dict[str, Any]] = []
    most = project.config.load_limits.cases
    taken: set[str] = set()
    for n, (test_loc, raw_test) in enumerate(_all_tests(t), 1):
        if derive_ids and raw_test.get("id") is None:
            raw_test = {**raw_test, "id": _derived_id(n, raw_test, taken)}
        taken.add(str(raw_test.get("id")))
        if (len(cases) + len(prompts)) * max(len(providers), 1) > most:
            t.fail(test_loc, _too_many_cases(most))
            raise InvalidFileError(t.sorted_problems())
        for prompt_id, prompt, prompt_loc in prompts:
            case = _case(t, test_loc, raw_test, default_test, prompt, prompt_loc, suite_metadata)
            if case is None:
                continue
            if len(prompts) > 1:
                case["id"] = f"{case['id']}__prompt_{prompt_id}"
            index = len(cases)
            for loc, source in case.pop("_origin").items():
                t.origin[("evalcases", index, *loc)] = source
            t.origin[("evalcases", index)] = test_loc
            cases.append(case)
    if len(providers) == 1:
        out["target"] = providers[0]
    elif providers:  # every test on every provider, in one campaign: the target is no
        out["execution"] = {"targets": providers}  # part of the case id
        t.origin[("execution", "targets")] = ("providers",)
    elif not providers and isinstance(data.get("defaults"), dict):
        default_provider = data["defaults"].get("provider")
        if isinstance(default_provider, str):
            out["target"] = default_provider
    out["evalcases"] = cases
    t.origin[("evalcases",)] = ("tests",)
    if t.problems:
        raise InvalidFileError(t.sorted_problems())
    return SuiteDocument(doc._replace(data=out, origin=t.origin), t.notes)


def _derived_id(n: int, raw: dict[str, Any], taken: set[str]) -> str:
    """`test-<n>` (its place among the tests, from 1), with its description when it has
    one: stable while the tests keep their order, readable in reports."""
    description = raw.get("description")
    slug = _safe(str(description)) if isinstance(description, (str, int)) else ""
    derived = f"test-{n}-{slug}" if slug else f"test-{n}"
    while derived in taken:
        derived += "-again"
    return derived


def _check_count(t: _Translation, count: int, loc: Loc) -> None:
    """Stop at a tests file that brings the suite past its number of cases."""
    most = t.project.config.load_limits.cases
    if count > most:
        t.fail(loc, _too_many_cases(most))
        raise InvalidFileError(t.sorted_problems())


def _too_many_cases(most: int) -> str:
    return (
        f"more than {most} cases (tests times prompts times providers); split the file, "
        f"or {how_to_raise('load_limits', 'cases')}"
    )


def _safe(text: str) -> str:
    return re.sub(r"[^A-Za-z0-9_.-]+", "-", text).strip("-")[:48]


def _default_test(t: _Translation) -> dict[str, Any]:
    raw = t.data.get("default_test", t.data.get("defaultTest"))
    if isinstance(raw, str) and raw.startswith("file://"):
        text = t.read(raw, ("default_test",))
        loaded = (
            load_yaml(t.doc.path.parent / raw.removeprefix("file://"), text).data if text else None
        )
        return loaded if isinstance(loaded, dict) else {}
    if raw is not None and not isinstance(raw, dict):
        t.fail(("default_test",), "default_test must be a mapping or a file:// reference")
        return {}
    return raw or {}


def _providers(t: _Translation) -> list[str]:
    """Target names: a label, or an object's `label` (else its `id`)."""
    raw = t.data.get("providers")
    entries = raw if isinstance(raw, list) else ([raw] if raw is not None else [])
    names = []
    for i, entry in enumerate(entries):
        loc: Loc = ("providers", i) if isinstance(raw, list) else ("providers",)
        if isinstance(entry, str):
            names.append(entry.removeprefix("file://"))
        elif isinstance(entry, dict) and isinstance(entry.get("label") or entry.get("id"), str):
            names.append(entry.get("label") or entry["id"])
        else:
            t.fail(loc, "a provider is a label, or a mapping with `id` and `label`")
    return names


def _prompts(t: _Translation) -> list[tuple[str, Any, Loc]]:
    """(id, template, where) per prompt; without `prompts`, the test's `vars.input` as is."""
    raw = t.data.get("prompts")
    if raw is None:
        return [("input", "{{ input }}", ())]
    entries = raw if isinstance(raw, list) else [raw]
    if isinstance(raw, list) and raw and all(_is_message(e) for e in raw):
        entries = [raw]  # one chat prompt written as a list of messages
    found = []
    for i, entry in enumerate(entries):
        loc: Loc = ("prompts", i) if isinstance(raw, list) else ("prompts",)
        prompt_id = f"prompt-{i + 1}"
        if isinstance(entry, dict) and not _is_message(entry):
            prompt_id = str(entry.get("id") or entry.get("label") or prompt_id)
            for unsupported in ("function_file", "function", "command"):
                if unsupported in entry:
                    t.fail(
                        loc,
                        f"prompt `{unsupported}` runs JavaScript inside AgentV; evalrelay cannot "
                        "run it: write the prompt as text, a file:// or messages",
                    )
            if "file" in entry:
                entry = f"file://{str(entry['file']).removeprefix('file://')}"
            else:
                entry = entry.get("messages", entry.get("prompt", entry.get("raw")))
        if isinstance(entry, str) and entry.startswith("file://"):
            text = t.read(entry, loc)
            if text is None:
                continue
            stem = Path(entry.removeprefix("file://")).stem
            prompt_id = _safe(stem) if prompt_id.startswith("prompt-") else prompt_id
            entry = text.replace("\r\n", "\n")
        found.append((_safe(prompt_id), entry, loc))
    return found


def _is_message(value: Any) -> bool:
    return isinstance(value, dict) and "role" in value and "content" in value


def _all_tests(t: _Translation) -> Iterator[tuple[Loc, dict[str, Any]]]:
    """The tests, then the tests the scenarios make, each with where it was written."""
    if "tests" in t.data:
        yield from _tests(t)
    if "scenarios" in t.data:
        yield from scenario_tests(t.data["scenarios"], t.doc.path.parent, t.inside, t.fail)


def _tests(t: _Translation) -> Iterator[tuple[Loc, dict[str, Any]]]:
    raw = t.data.get("tests")
    entries = raw if isinstance(raw, list) else [raw]
    for j, entry in enumerate(entries):
        loc: Loc = ("tests", j) if isinstance(raw, list) else ("tests",)
        if isinstance(entry, dict):
            yield loc, entry
        elif isinstance(entry, str):
            for case in _external_cases(t, entry, loc):
                yield loc, case
        elif entry is not None:
            t.fail(loc, "a test is a mapping (id, vars, assert) or a path to a file of tests")


def _external_cases(t: _Translation, reference: str, loc: Loc) -> list[dict[str, Any]]:
    """Tests kept in other files: YAML or JSON lists, JSONL, CSV, or a folder of
    `*/case.yaml`."""
    path = t.doc.path.parent / reference.removeprefix("file://")
    paths = sorted(path.parent.glob(path.name)) if any(c in path.name for c in "*?[") else [path]
    cases: list[dict[str, Any]] = []
    for found in paths:
        if not t.inside(found, loc):
            continue
        if found.is_dir():
            for case_file in sorted(found.glob("*/case.y*ml")):
                case = load_yaml(case_file).data
                if isinstance(case, dict):
                    cases.append({"id": case_file.parent.name, **case})
            continue
        if not found.is_file():
            t.fail(loc, f"tests file not found: {found}")
            continue
        try:
            if found.suffix == ".jsonl":
                lines = found.read_text(encoding="utf-8").splitlines()
                _check_count(t, len(lines) + len(cases), loc)
                cases += [json.loads(line) for line in lines if line.strip()]
            elif found.suffix == ".json":
                data = json.loads(found.read_text(encoding="utf-8"))
                cases += data.get("tests", []) if isinstance(data, dict) else data
            elif found.suffix in (".yaml", ".yml"):
                data = load_yaml(found).data
                cases += data if isinstance(data, list) else []
            elif found.suffix == ".csv":
                cases += read_csv_tests(found)
            else:
                t.fail(loc, f"tests file {found.name}: evalrelay reads YAML, JSON, JSONL and "
                       "CSV tests; convert it to one of those")  # fmt: skip
        except json.JSONDecodeError as exc:
            t.fail(loc, f"{found}:{exc.lineno}:{exc.colno}: not JSON ({exc.msg})")
        except CsvTestsError as exc:
            t.fail(loc, f"{found}: {exc}")
        _check_count(t, len(cases), loc)
    tests = [c for c in cases if isinstance(c, dict)]
    if t.project.untrusted:
        for test in tests:
            t.problems += tests_file_problems(t.doc, test, loc, t.project.untrusted)
    return tests


def _suite_metadata(data: dict[str, Any]) -> dict[str, Any]:
    """What every result of the suite carries: `metadata`, `governance`, `tags`,
    `environment`, and the suite's own version and the like."""
    metadata: dict[str, Any] = dict(data.get("metadata") or {})
    for key in ("governance", "environment", *METADATA_KEYS):
        if key in data:
            metadata[key] = data[key]
    tags = data.get("tags")
    if tags is not None:
        metadata["tags"] = tags
    return metadata


def _case(
    t: _Translation,
    loc: Loc,
    raw: dict[str, Any],
    default_test: dict[str, Any],
    prompt: Any,
    prompt_loc: Loc,
    suite_metadata: dict[str, Any],
) -> dict[str, Any] | None:
    case_id = raw.get("id")
    vars_ = {**(default_test.get("vars") or {}), **(raw.get("vars") or {})}
    if "input" in raw:  # external cases may carry their input directly
        vars_["input"] = raw["input"]
    context = {**vars_, "vars": vars_, "env": t.env}
    if case_id is None:
        t.fail(loc, "a test needs an `id`; add one")
        return None
    case_id = str(t.render(case_id, context, (*loc, "id")))
    if isinstance(prompt, PromptBuilder):  # a dialect's prompt made from the test's vars
        try:
            prompt = prompt.build(vars_)
        except ValueError as exc:
            t.fail(prompt_loc, str(exc), case_id)
            return None
    # Rendered twice, as AgentV does: vars inside a message list of `vars.input` fill in too.
    rendered_input = t.render(t.render(prompt, context, prompt_loc), context, prompt_loc)
    input_messages = _messages(rendered_input)
    case: dict[str, Any] = {"id": case_id, "input_messages": input_messages}
    origin: dict[Loc, Loc] = {
        ("input_messages",): (*loc, "vars", "input") if "input" in (raw.get("vars") or {}) else loc,
        ("id",): (*loc, "id"),
    }
    expected = raw.get("expected_output", vars_.get("expected_output"))
    if expected is not None:
        expected = t.render(expected, context, (*loc, "vars", "expected_output"))
        case["expected_messages"] = _expected(expected)
    for key in ("description", "conversation_id"):
        if isinstance(raw.get(key), (str, int)):
            case[key] = t.render(str(raw[key]), context, (*loc, key))
    criteria = raw.get("criteria", raw.get("expected_outcome"))
    if isinstance(criteria, str):
        case["expected_outcome"] = t.render(criteria, context, (*loc, "criteria"))
    metadata = _merged(suite_metadata, raw.get("metadata") or {})
    if metadata:
        case["metadata"] = metadata
    execution = _mapping(raw.get("execution"))
    threshold = (raw.get("run") or {}).get(
        "threshold", execution.get("threshold", raw.get("threshold"))
    )
    if threshold is not None:
        case["threshold"] = threshold
    lists = _assert_lists(t, raw, loc, default_test, case.get("expected_outcome"))
    options = {  # promptfoo's: the test's over the default test's
        **_mapping(default_test.get("options")),
        **_mapping(raw.get("options")),
    }
    judge = options.get("provider") or _mapping(t.data.get("defaults")).get("grader")
    evaluators: list[dict[str, Any]] = []
    for entries, where in lists:
        if not entries:
            continue
        if t.adapt_asserts is not None:
            entries = t.adapt_asserts(entries, options)
        entries = t.render(entries, context, where) if raw.get("vars") or vars_ else entries
        for evaluator, source in to_evaluators(entries, where, judge, t.read, t.fail, case_id):
            origin[("evaluators", len(evaluators))] = source
            evaluators.append(evaluator)
    _conversation(t, raw, case, origin, loc, context, judge)
    if evaluators:
        case["evaluators"] = evaluators
    case["_origin"] = origin
    return case


def _mapping(value: Any) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def _assert_lists(
    t: _Translation, raw: dict[str, Any], loc: Loc, default_test: dict[str, Any], criteria: Any
) -> list[tuple[Any, Loc]]:
    """The assert lists a test is graded by, each with where it was written: its own
    (`assert`, or AgentV's `execution.assert`), then, unless `execution.skip_defaults`,
    the default test's and the suite's. A test with none of them is graded on its
    `criteria` (as rendered) when it has them."""
    execution = _mapping(raw.get("execution"))
    if "assert" in raw:
        lists: list[tuple[Any, Loc]] = [(raw["assert"], (*loc, "assert"))]
    else:
        lists = [(execution.get("assert"), (*loc, "execution", "assert"))]
    if not execution.get("skip_defaults"):
        lists += [
            (default_test.get("assert"), ("default_test", "assert")),
            (t.data.get("assert"), ("assert",)),
        ]
    if not any(entries for entries, _ in lists) and isinstance(criteria, str):
        lists = [([criteria], (*loc, "criteria"))]
    return lists


def _conversation(
    t: _Translation,
    raw: dict[str, Any],
    case: dict[str, Any],
    origin: dict[Loc, Loc],
    loc: Loc,
    context: dict[str, Any],
    judge: str | None,
) -> None:
    """AgentV's conversation mode: `mode`, `aggregation`, `on_turn_failure` as written, and
    each turn's `assert` made evaluators as the case's are."""
    for key in ("mode", "aggregation", "on_turn_failure"):
        if key in raw:
            case[key] = raw[key]
            origin[(key,)] = (*loc, key)
    turns = raw.get("turns")
    if turns is None:
        return
    origin[("turns",)] = (*loc, "turns")
    if not isinstance(turns, list):
        case["turns"] = turns  # validation says what it should be, at its line
        return
    case["turns"] = [
        _turn(t, turn, (*loc, "turns", k), ("turns", k), origin, context, judge, case["id"])
        for k, turn in enumerate(turns)
    ]


def _turn(
    t: _Translation,
    raw: Any,
    where: Loc,
    ours: Loc,
    origin: dict[Loc, Loc],
    context: dict[str, Any],
    judge: str | None,
    case_id: str,
) -> Any:
    origin[ours] = where
    if not isinstance(raw, dict):
        return raw
    turn = {k: t.render(v, context, (*where, k)) for k, v in raw.items() if k != "assert"}
    for key in turn:
        origin[(*ours, key)] = (*where, key)
    if "assert" in raw:
        evaluators: list[dict[str, Any]] = []
        for evaluator, source in to_evaluators(
            raw["assert"], (*where, "assert"), judge, t.read, t.fail, case_id
        ):
            origin[(*ours, "evaluators", len(evaluators))] = source
            evaluators.append(evaluator)
        turn["evaluators"] = evaluators
    return turn


def _messages(rendered: Any) -> Any:
    """The rendered prompt as input messages: a message list, a JSON chat, or one user turn."""
    if isinstance(rendered, str):
        stripped = rendered.strip()
        if stripped.startswith("["):
            try:
                parsed = json.loads(stripped)
            except json.JSONDecodeError:
                parsed = None
            if isinstance(parsed, list) and parsed and all(_is_message(m) for m in parsed):
                return parsed
        return [{"role": "user", "content": rendered}]
    if isinstance(rendered, dict):
        return [rendered] if "role" in rendered else [{"role": "user", "content": rendered}]
    if isinstance(rendered, list):
        return rendered
    return [{"role": "user", "content": "" if rendered is None else str(rendered)}]


def _expected(value: Any) -> list[dict[str, Any]]:
    if isinstance(value, list) and all(isinstance(m, dict) and "role" in m for m in value):
        return value
    return [{"role": "assistant", "content": value}]


def _merged(base: dict[str, Any], own: dict[str, Any]) -> dict[str, Any]:
    """AgentV's merge: lists joined (suite first, no repeats), mappings merged, the test's
    own values win."""
    merged = dict(base)
    for key, value in own.items():
        old = merged.get(key)
        if isinstance(old, list) and isinstance(value, list):
            merged[key] = old + [v for v in value if v not in old]
        elif isinstance(old, dict) and isinstance(value, dict):
            merged[key] = _merged(old, value)
        else:
            merged[key] = value
    return merged

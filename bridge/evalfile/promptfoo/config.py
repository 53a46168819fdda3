"""A promptfoo config rewritten as the suite document `suite_format` reads.

What differs from AgentV's reading is settled here, before the shared translation:
`targets` (promptfoo's other name for `providers`), providers written as `{id: options}`,
no `tests` (each prompt runs once), `scenarios` (each config times each test), tests and
prompts made by Python or JavaScript functions, and `javascript`/`python` assertions.
Keys promptfoo runs itself and evalrelay does not are named in notes, never silently
dropped. Places stay those of the file, so errors still name its lines.
"""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, ValidationError

from evalrelay.bridge.errors import Diagnostic, InvalidFileError
from evalrelay.bridge.evalfile.limits import LoadLimits
from evalrelay.bridge.evalfile.project import Project
from evalrelay.bridge.evalfile.promptfoo.assertions import JUDGED, promptfoo_asserts
from evalrelay.bridge.evalfile.promptfoo.functions import (
    FunctionError,
    call_function,
    is_function_file,
    split_reference,
)
from evalrelay.bridge.evalfile.promptfoo.providers import (
    by_kind,
    embedding_name,
    provider_entries,
    target_name,
)
from evalrelay.bridge.evalfile.suite_format import SuiteDocument, translate_suite
from evalrelay.bridge.evalfile.yaml_source import Loc, YamlDocument

NOTED_KEYS = {
    "redteam": "red-team generation is promptfoo's own; run `promptfoo redteam generate` "
    "and evaluate the tests it writes",
    "extensions": "promptfoo's extension hooks are not run by evalrelay",
    "outputPath": "`run` writes a .json outputPath in promptfoo's results shape, beside its "
    "own results file; other formats are not written",
    "sharing": "results are not shared to promptfoo's cloud",
    "nunjucksFilters": "custom Nunjucks filters (JavaScript) are not available",
    "derivedMetrics": "derived metrics are not computed",
}


DEFAULT_PROMPT = "{{ prompt if prompt is defined else vars | tojson }}"
"""promptfoo's prompt when a config names none: the test's `prompt` variable. A test
without one sends its vars as JSON (promptfoo sends an empty prompt, which evalrelay
refuses), what an `http` target's body is built from."""


class PromptfooConfig(BaseModel):
    """The top level as promptfoo's reference lists it; only the shapes evalrelay reads are
    checked here, the rest is kept for the notes."""

    model_config = ConfigDict(extra="allow", populate_by_name=True)

    description: str | None = None
    prompts: Any = None
    providers: Any = None
    tests: Any = None
    scenarios: list[Any] | None = None


def translate_promptfoo(doc: YamlDocument, project: Project) -> SuiteDocument:
    """The config as an `evalcases` document, or InvalidFileError naming each problem."""
    problems: list[Diagnostic] = []
    data: dict[str, Any] = copy.deepcopy(doc.data)
    notes = [f"{key}: {why}" for key, why in NOTED_KEYS.items() if key in data]
    folder = doc.path.parent

    def fail(loc: Loc, message: str) -> None:
        problems.append(doc.diagnostic(loc, message))

    try:
        PromptfooConfig.model_validate(data)
    except ValidationError as exc:
        for error in exc.errors():
            fail(tuple(error["loc"]), f"{error['msg']}, as promptfoo's reference defines it")
    if "providers" not in data and "targets" in data:
        data["providers"] = data.pop("targets")
    data["providers"] = provider_entries(data.get("providers"), folder, project.files_root)
    data.pop("evaluate_options", None)
    if isinstance(data.get("evaluateOptions"), dict):
        options = data["evaluateOptions"]
        data["evaluate_options"] = {
            **({"repeat": options["repeat"]} if isinstance(options.get("repeat"), int) else {}),
            **({"timeout_ms": options["timeoutMs"]} if "timeoutMs" in options else {}),
        }
    for key in ("extensions", "workspace", "nunjucks_filters", "input_files"):
        data.pop(key, None)  # AgentV's notes for these would mislead a promptfoo author
    data["prompts"] = _prompts(data.get("prompts"), folder, project, fail)
    tests = data.get("tests")
    if isinstance(tests, str) and is_function_file(tests):
        tests = _generated(tests, folder, project, ("tests",), fail)
    elif isinstance(tests, list) and any(
        isinstance(entry, str) and is_function_file(entry) for entry in tests
    ):
        expanded: list[Any] = []
        for j, entry in enumerate(tests):
            if isinstance(entry, str) and is_function_file(entry):
                expanded += _generated(entry, folder, project, ("tests", j), fail)
            else:
                expanded.append(entry)
        tests = expanded
    if "scenarios" in data:
        tests = (tests if isinstance(tests, list) else []) + _scenarios(data.pop("scenarios"))
    if tests is None and "redteam" in data:
        fail(
            ("redteam",),
            "a red-team config has no tests until promptfoo generates them: run "
            "`promptfoo redteam generate`, then validate or run the file it writes",
        )
    if tests is None:
        tests = [{"vars": {}}]  # promptfoo runs each prompt once with no variables
    if data["prompts"] is None:
        data["prompts"] = [DEFAULT_PROMPT]
    data["tests"] = tests
    _name_graders(data)
    if problems:
        raise InvalidFileError(sorted(set(problems), key=lambda d: (d.line, d.column)))
    translated = translate_suite(
        doc._replace(data=data),
        project,
        derive_ids=True,
        adapt_asserts=lambda entries, options: promptfoo_asserts(entries, str(folder), options),
    )
    document = translated.document
    graded = document._replace(data={**document.data, "grading": "promptfoo"})
    return SuiteDocument(graded, notes + translated.notes)


def _prompts(raw: Any, folder: Path, project: Project, fail: Any) -> Any:
    """promptfoo's `{id: file://..., label}` prompt objects become `{file, label}`; a
    prompt function becomes a PromptFunction, called for each test."""
    entries = raw if isinstance(raw, list) else ([raw] if raw is not None else None)
    if entries is None:
        return None
    out = []
    for i, entry in enumerate(entries):
        loc: Loc = ("prompts", i) if isinstance(raw, list) else ("prompts",)
        reference = entry
        if (
            isinstance(entry, dict)
            and isinstance(entry.get("id"), str)
            and not ("raw" in entry or "content" in entry)
        ):
            reference = entry["id"]
        if isinstance(reference, str) and is_function_file(reference):
            path_text, name = split_reference(reference)
            path = (folder / path_text).resolve()
            if not path.is_relative_to(project.files_root) or not path.is_file():
                fail(loc, f"prompt function file {path_text} not found inside {project.files_root}")
                continue
            label = entry.get("label") if isinstance(entry, dict) else None
            builder = PromptFunction(path, name, project.config.load_limits)
            out.append({"label": label or name or path.stem, "prompt": builder})
            continue
        if isinstance(entry, dict) and ("raw" in entry or "content" in entry):
            entry = {**entry, "prompt": entry.get("raw", entry.get("content"))}
        elif isinstance(entry, dict) and isinstance(entry.get("id"), str):
            label = entry.get("label")
            entry = {"file": entry["id"], **({"label": label} if label else {})}
        out.append(entry)
    return out if isinstance(raw, list) else (out[0] if out else None)


class PromptFunction:
    """A promptfoo prompt function (`file://prompts.py:build`, a `.js` export): called
    with promptfoo's `context` (`vars`) for each test, in a bounded child process."""

    def __init__(self, path: Path, name: str | None, limits: LoadLimits) -> None:
        self.path, self.name, self.limits = path, name, limits

    def build(self, vars_: dict[str, Any]) -> Any:
        try:
            made = call_function(self.path, self.name, [{"vars": vars_}], self.limits)
        except FunctionError as exc:
            raise ValueError(f"prompt function {exc}") from None
        if isinstance(made, dict) and "prompt" in made:
            made = made["prompt"]  # promptfoo's {prompt, config}
        if isinstance(made, str) or (isinstance(made, list) and made):
            return made
        raise ValueError(
            f"prompt function {self.path.name}:{self.name} returned neither a text nor a "
            "list of messages"
        )


def _generated(reference: str, folder: Path, project: Project, loc: Loc, fail: Any) -> list[Any]:
    """Tests a Python or JavaScript function returns (`file://gen.py:make_tests`)."""
    path_text, name = split_reference(reference)
    path = (folder / path_text).resolve()
    if not path.is_relative_to(project.files_root) or not path.is_file():
        fail(loc, f"test generator {path_text} not found inside {project.files_root}")
        return []
    try:
        made = call_function(path, name, [], project.config.load_limits)
    except FunctionError as exc:
        fail(loc, f"test generator {exc}")
        return []
    if not isinstance(made, list):
        fail(loc, f"test generator {path_text}:{name} returned no list of tests")
        return []
    return made


def _scenarios(raw: Any) -> list[dict[str, Any]]:
    """Each scenario's `config` entries times its `tests`, vars merged (the test's win),
    as promptfoo expands them."""
    tests: list[dict[str, Any]] = []
    for scenario in raw if isinstance(raw, list) else []:
        if not isinstance(scenario, dict):
            continue
        configs = scenario.get("config") or [{}]
        for k, config in enumerate(configs):
            for test in scenario.get("tests") or []:
                if not isinstance(test, dict) or not isinstance(config, dict):
                    continue
                merged = {**config, **test}
                merged["vars"] = {**(config.get("vars") or {}), **(test.get("vars") or {})}
                merged["assert"] = [*(config.get("assert") or []), *(test.get("assert") or [])]
                if scenario.get("description") and "description" not in test:
                    merged["description"] = f"{scenario['description']} {k + 1}"
                tests.append(merged)
    return tests


def read_differently(doc: YamlDocument) -> list[tuple[Loc, str]]:
    """Where an assertion is read otherwise than a reader of promptfoo's reference might
    expect: a model-graded one asked with evalrelay's judge prompt, not promptfoo's (the
    verdict rule is promptfoo's, the question put differs); a regex's `flags`, which
    promptfoo does not read either. `validate` says so at each."""
    holders: list[tuple[Loc, Any]] = [(("defaultTest",), doc.data.get("defaultTest"))]
    tests = doc.data.get("tests")
    holders += [(("tests", i), t) for i, t in enumerate(tests)] if isinstance(tests, list) else []
    found: list[tuple[Loc, str]] = []
    for where, holder in holders:
        entries = holder.get("assert") if isinstance(holder, dict) else None
        for i, entry in enumerate(entries if isinstance(entries, list) else []):
            kind = entry.get("type") if isinstance(entry, dict) else None
            loc: Loc = (*where, "assert", i)
            if kind in JUDGED:
                found.append((loc, f"{kind} is asked of the grader with evalrelay's judge "
                              "prompt, not promptfoo's; its pass and threshold decide as in "
                              "promptfoo"))  # fmt: skip
            if (
                isinstance(kind, str)
                and kind.removeprefix("not-") == "regex"
                and (isinstance(entry, dict) and "flags" in entry)
            ):
                found.append(((*loc, "flags"), "promptfoo's regex takes no flags "
                              "(new RegExp(value)), so they are not read here either"))  # fmt: skip
    return found


def _name_graders(data: dict[str, Any]) -> None:
    """`options.provider` and an assertion's `provider` as target names; a provider map's
    `embedding` (for `similar`) as `embedding_provider`."""
    holders = [data.get("defaultTest")]
    holders += data["tests"] if isinstance(data.get("tests"), list) else []
    for holder in holders:
        if not isinstance(holder, dict):
            continue
        options = holder.get("options")
        if isinstance(options, dict) and "provider" in options:
            written = options["provider"]
            holder["options"] = {
                **options,
                "provider": target_name(by_kind(written, "text")),
                "embedding_provider": embedding_name(written),
            }
        for entry in holder.get("assert") or []:
            if isinstance(entry, dict) and "provider" in entry:
                embeds = str(entry.get("type", "")).removeprefix("not-").startswith("similar")
                name = embedding_name if embeds else target_name
                entry["provider"] = name(entry["provider"])

"""THE allow-list: what a file from someone other than the operator may hold.

There are two trust levels. A file the operator names (`run`, `validate`, `render`) is
trusted as the operator is: it runs unchanged, code and all. A file dropped in a watched
inbox (or checked with `validate --untrusted`) is not: whoever can write there is not
the operator. It may use the data features listed below (cases, messages, files inside
the inbox, declarative evaluators, the operator's targets by name) and nothing else.
Every other key, evaluator kind, transform, provider definition, test generator, prompt
function, judge target or override of a target's settings is refused, with the reason,
before anything in the file runs. A feature added to a format is refused until it is
listed here (tests/bridge/evalfile/test_untrusted.py walks the schema for fields that
are neither).
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict

from evalrelay.bridge.errors import Diagnostic
from evalrelay.bridge.evalfile import evaluators as ev
from evalrelay.bridge.evalfile import schema as sc
from evalrelay.bridge.evalfile import tools as tl
from evalrelay.bridge.evalfile.allow_list import (
    DATA,
    SAFE,
    ByType,
    Decision,
    Each,
    FieldTable,
    Keys,
    Lift,
    Loc,
    Refused,
    Rule,
    Text,
    model_refusals,
    raw_refusals,
)
from evalrelay.bridge.evalfile.yaml_source import YamlDocument


class Untrusted(BaseModel):
    """A file from the inbox, and what the operator lets such files do."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    inbox: Path
    """The only folder the file's attached, prompt and test files may be read from."""
    allow_code: bool = False
    """`--allow-code`: code the file names runs (boxed, with a clean environment)."""
    define_targets: bool = False
    """`--trust-inbox-config`: the file may define targets and name its judges."""

    def allows(self, lift: Lift | None) -> bool:
        return (lift == "code" and self.allow_code) or (lift == "targets" and self.define_targets)


RUNS_CODE = (
    "files dropped in the inbox may not run code: start the watcher with --allow-code if "
    "everyone who can write here is trusted"
)
DEFINES_TARGETS = (
    "files dropped in the inbox run on the operator's targets, by name: define it in the "
    "operator's targets file, or start the watcher with --trust-inbox-config if everyone "
    "who can write here is trusted"
)
NOT_LISTED = "is not among the keys a file dropped in the inbox may use (docs/trust.md)"


def _code(what: str) -> Refused:
    return Refused(f"{what}; {RUNS_CODE}", "code")


def _command(spec: Any) -> str:
    """The command an evaluator runs, shortened, for its refusal."""
    script = getattr(spec, "script", None) or getattr(spec, "command", None) or ""
    command = script if isinstance(script, str) else " ".join(script)
    return repr(command if len(command) <= 60 else command[:57] + "...")


JUDGE = Refused(
    lambda name: (
        f"names its judge ({name}); the judge of a dropped file is the one the "
        f"operator's target names (judge_target, default_judge); {DEFINES_TARGETS}"
    ),
    "targets",
)
OTHER = Refused(lambda key: f"`{key}` {NOT_LISTED}")

# ---- the evalcases schema, field by field ---------------------------------------------

_SAFE_FIELDS: dict[type[BaseModel], tuple[str, ...]] = {
    sc.EvalFile: (
        "schema_", "description", "target", "execution", "dataset", "system_prompt", "tools",
        "tool_choice", "evaluators", "evaluator", "repeats", "timeout_seconds", "threshold",
        "evalcases", "grading",
    ),
    sc.Execution: ("target", "targets", "evaluators"),
    sc.EvalCase: (
        "id", "outcome", "expected_outcome", "description", "input_messages",
        "expected_messages", "conversation_id", "metadata", "target", "execution",
        "evaluators", "evaluator", "rubrics", "system_prompt", "tools", "tool_choice",
        "repeats", "timeout_seconds", "threshold", "note", "mode", "turns", "aggregation",
        "on_turn_failure",
    ),
    sc.ConversationTurn: ("input", "expected_output", "evaluators"),
    sc.TextSegment: ("type", "value"),
    sc.FileSegment: ("type", "value"),  # read from inside the inbox only (Project.files_root)
    sc.ToolCall: ("id", "name", "arguments", "output"),
    sc.MessageBase: ("name",),
    sc.SystemMessage: ("role", "content"),
    sc.UserMessage: ("role", "content"),
    sc.AssistantMessage: ("role", "content", "tool_calls"),
    sc.ToolMessage: ("role", "content", "tool_call_id"),
    tl.ToolDefinition: ("name", "description", "parameters"),
    tl.NamedToolChoice: ("name",),
    ev._EvaluatorBase: ("name", "weight", "negate", "required", "min_score"),
    ev.ContainsEvaluator: ("type", "value"),
    ev.ContainsSomeEvaluator: ("type", "value"),
    ev.NotContainsEvaluator: ("type", "value"),
    ev.RegexEvaluator: ("type", "flags", "pattern"),
    ev.EqualsEvaluator: ("type", "value"),
    ev.JsonValidEvaluator: ("type",),
    ev.JsonContainedEvaluator: ("type", "json_schema"),
    ev.LevenshteinEvaluator: ("type", "value", "threshold"),
    ev.SimilarityEvaluator: ("type",),
    ev.EmbeddingSimilarEvaluator: ("type", "value", "threshold", "measure"),
    ev.RubricItem: (
        "id", "description", "weight", "required", "operator", "score_ranges", "min_score",
    ),
    ev.LlmJudgeEvaluator: ("type", "prompt", "rubrics", "criteria"),
    ev.RubricEvaluator: ("type", "rubrics"),
    ev.ExpectedToolCall: ("tool", "args", "output"),
    ev.ToolTrajectoryEvaluator: ("type", "mode", "minimums", "expected", "args_match"),
    ev.TrajectoryAssertion: ("type", "check", "value", "inverse"),
    ev.WorkspaceFileEvaluator: ("type", "path", "value"),
    ev.FieldSpec: (
        "path", "match", "required", "weight", "tolerance", "relative", "formats",
    ),
    ev.FieldAccuracyEvaluator: ("type", "fields", "aggregation"),
    ev.LatencyEvaluator: ("type", "threshold"),
    ev.CostEvaluator: ("type", "budget"),
    ev.TokenUsageEvaluator: ("type", "max_total", "max_input", "max_output"),
    ev.ExecutionMetricsEvaluator: (
        "type", "max_tool_calls", "max_llm_calls", "max_tokens", "max_cost_usd",
        "max_duration_ms",
    ),
    ev.UnsupportedEvaluator: ("type", "written_type", "why"),  # never runs: its cases fail
    ev.Aggregator: ("type", "weights", "threshold", "prompt"),
    ev.CompositeEvaluator: ("type", "evaluators", "aggregator"),
}  # fmt: skip
"""Data: what a case says, what it sends, and checks that read the answer."""

_TRANSFORM = _code("an answer transform runs a command on the workers")
_REFUSED_FIELDS: dict[tuple[type[BaseModel], str], Refused] = {
    (ev._EvaluatorBase, "transforms"): _TRANSFORM,
    **{(ev.AnswerTransform, name): _TRANSFORM for name in ev.AnswerTransform.model_fields},
    **{
        (ev.CodeEvaluator, name): _code("a script evaluator runs a command on the workers")
        for name in ("type", "script", "cwd", "timeout_seconds", "config")
    },
    **{
        (ev.WorkspaceCommandEvaluator, name): _code(
            "workspace_command runs a command on the workers"
        )
        for name in ("type", "command", "timeout_seconds")
    },
    (ev.LlmJudgeEvaluator, "target"): JUDGE,
    (ev.RubricEvaluator, "target"): JUDGE,
    (ev.EmbeddingSimilarEvaluator, "target"): JUDGE,
    (ev.Aggregator, "path"): _code("a code_judge aggregator runs a command on the workers"),
    (ev.Aggregator, "cwd"): _code("a code_judge aggregator runs a command on the workers"),
}
"""Each refused with its reason."""

FIELDS = FieldTable(
    fields={
        **{(model, name): SAFE for model, names in _SAFE_FIELDS.items() for name in names},
        **_REFUSED_FIELDS,
    },
    models={
        ev.CodeEvaluator: Refused(
            lambda spec: (
                f"evaluator {spec.type} runs a command on the workers "
                f"({_command(spec)}); {RUNS_CODE}"
            ),
            "code",
        ),
        ev.WorkspaceCommandEvaluator: Refused(
            lambda spec: (
                f"evaluator workspace_command runs a command on the workers "
                f"({_command(spec)}); {RUNS_CODE}"
            ),
            "code",
        ),
    },
)
"""The decision for every field of the `evalcases` schema."""


# ---- the formats as written, before translation ---------------------------------------


def _function(kind: str) -> Text:
    """A `file://x.py:fn` or `.js` reference, which the loader would call."""

    def check(text: str) -> Refused | None:
        path = text.removeprefix("file://").rpartition(":")[0] or text.removeprefix("file://")
        if text.startswith("file://") and path.endswith((".py", ".js", ".cjs", ".mjs", ".ts")):
            return _code(f"{kind} {text} is code the loader would call")
        return None

    return Text(check)


def _provider_file(text: str) -> Refused | None:
    if text.startswith("file://"):
        return Refused(f"provider file {text} defines targets; {DEFINES_TARGETS}", "targets")
    return None


PROVIDER = ByType(
    text=Text(_provider_file),
    mapping=Keys(
        {"id": Text(_provider_file), "label": DATA},
        Refused(
            lambda key: (
                f"`{key}` configures a provider (its server, key variable, model or "
                f"limits); {DEFINES_TARGETS}"
            ),
            "targets",
        ),
    ),
)
"""A provider is the name of one of the operator's targets: an id, or `{id, label}`."""

OPTIONS = Keys(
    {
        "provider": JUDGE,
        "transform": _code("a transform runs code on the workers"),
        "postprocess": _code("a transform runs code on the workers"),
    },
    OTHER,
)

TEST_KEYS: dict[str, Rule] = {
    "id": DATA,
    "description": DATA,
    "vars": DATA,
    "input": DATA,
    "expected_output": DATA,
    "criteria": DATA,
    "expected_outcome": DATA,
    "conversation_id": DATA,
    "metadata": DATA,
    "assert": DATA,  # each entry is checked as the evaluator it becomes (FIELDS)
    "execution": Keys({"assert": DATA, "threshold": DATA, "skip_defaults": DATA}, OTHER),
    "run": Keys({"threshold": DATA}, OTHER),
    "threshold": DATA,
    "options": OPTIONS,
    "mode": DATA,
    "aggregation": DATA,
    "on_turn_failure": DATA,
    "turns": DATA,  # each turn is a ConversationTurn (FIELDS)
}
TEST = Keys(TEST_KEYS, OTHER)
TESTS = ByType(
    text=_function("test generator"),
    items=Each(ByType(text=_function("test generator"), mapping=TEST)),
)
PROMPT = ByType(
    text=_function("prompt function"),
    mapping=Keys(
        {
            "id": _function("prompt function"),
            "file": _function("prompt function"),
            "label": DATA,
            "raw": DATA,
            "content": DATA,
            "messages": DATA,
            "prompt": DATA,
            "role": DATA,
            "name": DATA,
            "function_file": _code("a prompt function is code the loader would call"),
            "function": _code("a prompt function is code the loader would call"),
            "command": _code("a prompt command is code the loader would run"),
        },
        OTHER,
    ),
)
DEFAULT_TEST = ByType(text=_function("default test"), mapping=TEST)
METADATA = {
    key: DATA
    for key in (
        "$schema", "description", "metadata", "tags", "governance", "environment", "version",
        "author", "license", "category", "requires",
    )
}  # fmt: skip

SUITE = Keys(
    {
        **METADATA,
        "name": DATA,
        "threshold": DATA,
        "prompts": Each(PROMPT),
        "providers": Each(PROVIDER),
        "tests": TESTS,
        "default_test": DEFAULT_TEST,
        "defaultTest": DEFAULT_TEST,
        "assert": DATA,
        "evaluate_options": Keys({"repeat": DATA, "timeout_ms": DATA}, OTHER),
        "defaults": Keys({"provider": DATA, "grader": JUDGE}, OTHER),
        "extensions": _code("AgentV's lifecycle hooks are code"),
        "workspace": _code("workspace hooks are code"),
        "nunjucks_filters": _code("template filters are code"),
    },
    OTHER,
)
"""AgentV's suite format (`tests`, `prompts`, `assert`)."""

SCENARIO = Keys({"description": DATA, "config": Each(TEST), "tests": Each(TEST)}, OTHER)
PROMPTFOO = Keys(
    {
        **METADATA,
        "prompts": Each(PROMPT),
        "providers": Each(PROVIDER),
        "targets": Each(PROVIDER),
        "tests": TESTS,
        "defaultTest": DEFAULT_TEST,
        "scenarios": Each(SCENARIO),
        "evaluateOptions": Keys({"repeat": DATA, "timeoutMs": DATA}, OTHER),
        "extensions": _code("extension hooks are code"),
        "nunjucksFilters": _code("template filters are code"),
        "derivedMetrics": _code("derived metrics are code"),
        "env": Refused(
            f"`env` sets variables the providers read (keys, servers); {DEFINES_TARGETS}",
            "targets",
        ),
    },
    OTHER,
)
"""A promptfoo config."""

FORMATS: dict[str, Rule] = {"promptfoo": PROMPTFOO, "suite": SUITE}
"""The rules of each format translated into `evalcases` (which FIELDS checks as written)."""


def raw_problems(doc: YamlDocument, shape: str, untrusted: Untrusted) -> list[Diagnostic]:
    """What the file as written (`shape`: `promptfoo` or `suite`) may not hold."""
    return [
        doc.diagnostic(loc, _said(loc, refused.reason(value)), key=_is_key(value, loc))
        for loc, refused, value in raw_refusals(doc.data, FORMATS[shape])
        if not untrusted.allows(refused.lifted_by)
    ]


def tests_file_problems(
    doc: YamlDocument, test: Any, loc: Loc, untrusted: Untrusted
) -> list[Diagnostic]:
    """What a test read from a tests file may not hold, placed at the reference to it."""
    return [
        doc.diagnostic(loc, f"a test in this file: {_said(where, refused.reason(value))}")
        for where, refused, value in raw_refusals(test, TEST)
        if not untrusted.allows(refused.lifted_by)
    ]


def spec_problems(doc: YamlDocument, spec: sc.EvalFile, untrusted: Untrusted) -> list[Diagnostic]:
    """What the validated file may not hold, at the places written."""
    return [
        doc.diagnostic(loc, _said(loc, refused.reason(value)), _case_id(spec, loc))
        for loc, refused, value in model_refusals(spec, doc.data, FIELDS)
        if not untrusted.allows(refused.lifted_by)
    ]


def _said(loc: Loc, reason: str) -> str:
    """The reason, led by the key it is about unless it names it already."""
    key = next((part for part in reversed(loc) if isinstance(part, str)), None)
    if key is None or reason.startswith(("`", "evaluator ")):
        return reason
    return f"`{key}`: {reason}"


def _is_key(value: Any, loc: Loc) -> bool:
    """Whether the refusal is about a key (its position, then, not its value's)."""
    return bool(loc) and value == loc[-1]


def _case_id(spec: sc.EvalFile, loc: Loc) -> str | None:
    if len(loc) > 1 and loc[0] == "evalcases" and isinstance(loc[1], int):
        return spec.evalcases[loc[1]].id
    return None


def every_decision() -> Iterator[tuple[type[BaseModel], str, Decision]]:
    """The field table, for the docs and the tests."""
    for (model, name), decision in FIELDS.fields.items():
        yield model, name, decision

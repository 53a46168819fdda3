"""Evaluator entries as written in eval files (`evaluators:`); grading itself runs in workers.

Each entry is `{type, name?, weight?, ...}`. AgentV's `llm_judge` and `code` entries
load unchanged.
"""

from __future__ import annotations

import json
import shlex
from pathlib import Path
from typing import Annotated, Any, Literal

import regex
from pydantic import (
    AliasChoices,
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    NonNegativeFloat,
    NonNegativeInt,
    ValidationInfo,
    field_validator,
    model_validator,
)

from evalrelay.bridge.evalfile.limits import Seconds

PROMPT_FILE_SUFFIXES = frozenset({".md", ".txt", ".prompt", ".j2"})
"""A judge `prompt` ending in one of these names a file; otherwise it is the text itself."""


class AnswerTransform(BaseModel):
    """A command that rewrites the answer before an evaluator grades it (promptfoo's
    `transform`). It reads `{output, prompt, config}` as JSON on standard input and prints
    `{"output": ...}` (or `{"error": ...}`); the next step gets that output as it is, and
    an output that is not a string is graded as its JSON text."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    command: list[str] = Field(min_length=1)
    cwd: str | None = None
    """Where it runs on the worker (default: the worker's folder)."""
    config: dict[str, Any] = Field(default_factory=dict)
    timeout_seconds: Seconds = 30.0


class _EvaluatorBase(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True, populate_by_name=True)

    name: str | None = None
    weight: NonNegativeFloat = 1.0
    negate: bool = False
    """Pass when the check fails: the score becomes 1 - score, hits and misses swap."""
    required: bool = False
    """Below `min_score` (default: the pass threshold) this evaluator fails the whole case:
    its score becomes 0, as AgentV does it."""
    min_score: float | None = Field(default=None, ge=0.0, le=1.0)
    transforms: list[AnswerTransform] = Field(default_factory=list)
    """Applied to the answer in turn before this evaluator (a composite: its members) grades it."""


class ContainsEvaluator(_EvaluatorBase):
    """One string in the answer (`icontains`: ignoring case), or at its start or end
    (both trimmed, as AgentV compares them)."""

    type: Literal["contains", "icontains", "starts_with", "ends_with"]
    value: str


class ContainsSomeEvaluator(_EvaluatorBase):
    """Any or all of several strings in the answer; `i` ignores case."""

    type: Literal["contains_any", "contains_all", "icontains_any", "icontains_all"]
    value: list[str] = Field(min_length=1)

    @field_validator("value", mode="before")
    @classmethod
    def _comma_list(cls, value: Any) -> Any:
        """A single string is a comma-separated list, as promptfoo and AgentV read it."""
        if isinstance(value, str):
            return [part.strip() for part in value.split(",") if part.strip()]
        return value


class NotContainsEvaluator(_EvaluatorBase):
    type: Literal["not_contains"]
    value: str


REGEX_FLAGS = {
    "i": regex.IGNORECASE, "m": regex.MULTILINE, "s": regex.DOTALL, "g": 0, "u": 0, "y": 0
}  # fmt: skip
"""JavaScript's flags, as AgentV passes them to `RegExp`; g, u and y change nothing in a test."""


class RegexEvaluator(_EvaluatorBase):
    type: Literal["regex"]
    flags: str | None = None
    """JavaScript-style flags (`i`, `m`, `s`). Without them `^` and `$` match at every line."""
    pattern: str = Field(validation_alias=AliasChoices("pattern", "value"))
    """`value` is AgentV's name for it."""

    @field_validator("flags")
    @classmethod
    def _known_flags(cls, flags: str | None) -> str | None:
        unknown = sorted(set(flags or "") - set(REGEX_FLAGS))
        if unknown:
            raise ValueError(f"unknown regex flag(s) {''.join(unknown)}; use i, m or s")
        return flags

    @field_validator("pattern")
    @classmethod
    def _compiles(cls, pattern: str, info: ValidationInfo) -> str:
        try:
            compile_regex(pattern, info.data.get("flags"))
        except regex.error as exc:
            raise ValueError(f"not a valid regular expression ({exc}); fix the pattern") from None
        return pattern

    def compiled(self) -> regex.Pattern[str]:
        return compile_regex(self.pattern, self.flags)


def compile_regex(pattern: str, flags: str | None) -> regex.Pattern[str]:
    """The pattern as the `regex` package reads it: Python's `re` syntax, plus JavaScript's
    `(?<name>...)` groups, and a search that takes a time limit (`worker.grading.checks`),
    so a pattern that backtracks without end cannot hold a worker."""
    bits = regex.MULTILINE if flags is None else 0
    for letter in flags or "":
        bits |= REGEX_FLAGS.get(letter, 0)
    return regex.compile(pattern, bits)


class EqualsEvaluator(_EvaluatorBase):
    type: Literal["equals"]
    value: str


class JsonValidEvaluator(_EvaluatorBase):
    type: Literal["json_valid"]


class JsonContainedEvaluator(_EvaluatorBase):
    """promptfoo's `contains-json`: some JSON object within the answer (found as promptfoo
    finds it, from each `{` to its closing brace), valid under `schema` when one is given."""

    type: Literal["contains_json"]
    json_schema: dict[str, Any] | None = Field(default=None, alias="schema")

    @field_validator("json_schema")
    @classmethod
    def _valid_schema(cls, schema: dict[str, Any] | None) -> dict[str, Any] | None:
        if schema is not None:
            # Imported here: a tenth of a second that only files with a schema need.
            from jsonschema import Draft202012Validator
            from jsonschema.exceptions import SchemaError

            try:
                Draft202012Validator.check_schema(schema)
            except SchemaError as exc:
                raise ValueError(f"not a valid JSON Schema ({exc.message}); fix it") from None
        return schema


class LevenshteinEvaluator(_EvaluatorBase):
    """promptfoo's `levenshtein`: the answer within `threshold` edits of `value`."""

    type: Literal["levenshtein"]
    value: str
    threshold: NonNegativeInt = 5


class EmbeddingSimilarEvaluator(_EvaluatorBase):
    """promptfoo's `similar`: the answer's embedding compared with each value's, asked of
    an OpenAI-compatible embeddings endpoint (the `target`), by `measure`. It passes when
    one value reaches `threshold` (a similarity at least it; a euclidean distance at most
    it); its score is that value's, else the highest (a distance d scores 1 / (1 + d))."""

    type: Literal["embedding_similar"]
    value: list[str] = Field(min_length=1)
    threshold: float = 0.75
    measure: Literal["cosine", "dot_product", "euclidean"] = "cosine"
    """promptfoo's `similar` (cosine), `similar:dot` and `similar:euclidean`."""
    target: str | None = None
    """The embedding target (an OpenAI or OpenAI-compatible one): its `model` embeds."""

    @field_validator("value", mode="before")
    @classmethod
    def _one_or_many(cls, value: Any) -> Any:
        return [value] if isinstance(value, str) else value


class SimilarityEvaluator(_EvaluatorBase):
    """Similarity of the answer to the reference answer from `expected_messages`."""

    type: Literal["similarity", "expected_messages"]


class CodeEvaluator(_EvaluatorBase):
    """`code` (evalrelay's, and AgentV's 2025 name), `code_judge` (AgentV's January 2026
    one) or `script` (its July 2026 one, which reads `output` and may print `pass`)."""

    type: Literal["code", "code_judge", "script"]
    script: str | list[str] = Field(validation_alias=AliasChoices("script", "command"))
    """A command line, or an argument list. `code` splits the line like a shell would but
    never runs one; `code_judge` runs it with `sh -lc`, as AgentV does."""
    cwd: str | None = None
    """Where the script runs, relative to the eval file (default: the eval file's folder).
    It runs on the worker, so the script must be at the same path there."""
    timeout_seconds: Seconds = 60.0
    config: dict[str, Any] = Field(default_factory=dict)
    """`code_judge`: every other key of the entry, handed to the script as `config`."""

    @model_validator(mode="before")
    @classmethod
    def _other_keys_are_config(cls, data: Any) -> Any:
        if not isinstance(data, dict) or data.get("type") not in ("code_judge", "script"):
            return data
        own = set(cls.model_fields) | {"command"}
        extra = {k: v for k, v in data.items() if k not in own}
        return {k: v for k, v in data.items() if k in own} | {
            "config": {**data.get("config", {}), **extra}
        }

    @field_validator("script")
    @classmethod
    def _not_empty(cls, script: str | list[str]) -> str | list[str]:
        try:
            words = shlex.split(script) if isinstance(script, str) else script
        except ValueError as exc:
            raise ValueError(f"script cannot be split into arguments ({exc})") from None
        if not words or not words[0]:
            raise ValueError("script is empty; give the command that grades the answer")
        return script


class RubricItem(BaseModel):
    """One criterion the judge checks: satisfied or not (or scored 0-10 by `score_ranges`)."""

    model_config = ConfigDict(extra="forbid", frozen=True, populate_by_name=True)

    id: str | None = None
    """Default: `rubric-N`, N counting from 1 in the list."""
    description: str = Field(
        default="",
        validation_alias=AliasChoices("description", "outcome", "criteria", "expected_outcome"),
    )
    weight: NonNegativeFloat = 1.0
    required: bool = True
    """Not satisfied fails the evaluator, whatever its score."""
    operator: str | None = None
    """AgentV's hint to the judge (`correctness`, `contradiction`, ...), passed on with the item."""
    score_ranges: Any = None
    """AgentV's 0-10 bands; shown to the judge, who still answers satisfied or not."""
    min_score: float | None = Field(default=None, ge=0.0, le=1.0)

    @field_validator("id", mode="before")
    @classmethod
    def _number_as_text(cls, value: Any) -> Any:
        return str(value) if isinstance(value, int) and not isinstance(value, bool) else value

    @model_validator(mode="after")
    def _says_something(self) -> RubricItem:
        if not self.description.strip() and not self.score_ranges:
            raise ValueError("a rubric item needs its criterion (`outcome` or `description`)")
        return self

    def text(self) -> str:
        """The criterion as the judge reads it, with its score bands when there are any."""
        if not self.score_ranges:
            return self.description
        bands = json.dumps(self.score_ranges, ensure_ascii=False)
        return f"{self.description} (score bands 0-10: {bands})".strip()


def _rubric_items(value: Any) -> Any:
    """Strings are criteria; ids default to `rubric-N`."""
    if not isinstance(value, list):
        return value
    items = [{"description": v} if isinstance(v, str) else v for v in value]
    return [
        {"id": f"rubric-{n}", **item} if isinstance(item, dict) and not item.get("id") else item
        for n, item in enumerate(items, start=1)
    ]


Rubrics = Annotated[list[RubricItem], Field(min_length=1), BeforeValidator(_rubric_items)]


class LlmJudgeEvaluator(_EvaluatorBase):
    """Another target grades the answer. With `rubrics` it checks each criterion (`rubric`
    is the same with rubrics required)."""

    type: Literal["llm_judge"]
    target: str | None = None
    """The judge target; defaults to the candidate target's `judge_target`."""
    prompt: str | None = None
    """Inline judge instructions, or the path of a file holding them (read when the
    campaign is planned, so workers need nothing from the submitting machine). `{{ name }}`
    placeholders are filled in (`candidate_answer`, `question`, ...)."""
    rubrics: Rubrics | None = None
    criteria: str | None = None
    """What the answer must do, in place of the case's expected outcome (AgentV's
    `llm-rubric` value)."""

    def prompt_file(self) -> str | None:
        """The file `prompt` names (relative to the eval file), if it names one."""
        prompt = (self.prompt or "").removeprefix("file://")
        if prompt and "\n" not in prompt and Path(prompt).suffix in PROMPT_FILE_SUFFIXES:
            return prompt
        return None


class RubricEvaluator(_EvaluatorBase):
    type: Literal["rubric"]
    target: str | None = None
    rubrics: Rubrics


class ExpectedToolCall(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    tool: str = Field(min_length=1)
    args: dict[str, Any] | Literal["any"] | None = Field(
        default=None, validation_alias=AliasChoices("args", "input")
    )
    """Keys the call's arguments must hold with equal values (others may be there too);
    absent or `any`: not checked."""
    output: Any = None
    """What the call must have returned: a mapping's keys (at any depth) with equal values,
    or an equal value. Absent: not checked."""


class ToolTrajectoryEvaluator(_EvaluatorBase):
    """The tools the agent called, from the answer's tool calls (AgentV's modes)."""

    type: Literal["tool_trajectory"]
    mode: Literal["any_order", "in_order", "exact", "superset", "subset"]
    minimums: dict[str, NonNegativeInt] = Field(default_factory=dict)
    """`any_order`: tool name to the fewest calls wanted."""
    expected: list[ExpectedToolCall] = Field(default_factory=list)
    args_match: Literal["superset", "exact", "ignore"] = "superset"
    """`superset` (AgentV's January rule): the expected keys match; `exact`: all keys do."""

    @model_validator(mode="after")
    def _mode_has_what_it_needs(self) -> ToolTrajectoryEvaluator:
        if self.mode == "any_order" and not self.minimums:
            raise ValueError("mode any_order needs `minimums` ({tool: fewest calls})")
        if self.mode != "any_order" and "expected" not in self.model_fields_set:
            raise ValueError(f"mode {self.mode} needs `expected` ([{{tool, args?}}])")
        return self


class TrajectoryAssertion(_EvaluatorBase):
    """AgentV's July 2026 `trajectory:*` assertions: tool names are case-insensitive globs."""

    type: Literal["trajectory"]
    check: Literal["tool-used", "tool-sequence", "tool-args-match", "step-count"]
    value: Any = None
    inverse: bool = False
    """`not-trajectory:...`: what the check finds must not be."""

    @model_validator(mode="after")
    def _value_is_what_agentv_reads(self) -> TrajectoryAssertion:
        """AgentV's checks of `value`, with its words, made when the file loads."""
        what = f"trajectory:{self.check} assertion"
        why = _trajectory_value_problem(self.check, self.value)
        if why is not None:
            raise ValueError(f"{what} {why}")
        return self


def _trajectory_value_problem(check: str, value: Any) -> str | None:
    """What AgentV says is wrong with a `trajectory:*` value; None when nothing is."""
    if check == "tool-used":
        if isinstance(value, str) or (
            isinstance(value, list) and all(isinstance(v, str) for v in value)
        ):
            return None if value else "requires at least one expected tool"
        if not isinstance(value, dict):
            return "must have a string, string array, or object value"
        return _unnamed(value, "object")
    if check == "tool-sequence":
        if not isinstance(value, dict | list):
            return "must have an array or object value"
        steps = value if isinstance(value, list) else value.get("steps")
        steps = steps if isinstance(steps, list) else []
        for index, step in enumerate(steps):
            unnamed = _unnamed(step, f"step {index + 1}") if isinstance(step, dict) else None
            if unnamed:
                return unnamed
        return None if steps else "requires at least one expected step"
    if not isinstance(value, dict):
        return "must have an object value"
    if check == "step-count":
        return None if "min" in value or "max" in value else "must include a min or max property"
    return _unnamed(value, "object") or _args_match_problem(value)


def _unnamed(matcher: dict[str, Any], label: str) -> str | None:
    if matcher.get("name") or matcher.get("pattern"):
        return None
    return f"{label} must include a name or pattern property"


def _args_match_problem(value: dict[str, Any]) -> str | None:
    if "args" not in value and "arguments" not in value:
        return "must include an args or arguments property"
    if value.get("mode", "partial") not in ("partial", "exact"):
        return 'mode must be "partial" or "exact"'
    if "defaults" in value and not isinstance(value["defaults"], dict):
        return "defaults must be an object mapping argument names to default values"
    ignore = value.get("ignore", [])
    entries = ignore if isinstance(ignore, list) else [ignore]
    if any(not isinstance(entry, str) or not entry.strip() for entry in entries):
        return "ignore must be a non-empty string or an array of non-empty strings"
    return None


class WorkspaceFileEvaluator(_EvaluatorBase):
    """`file_exists` / `file_contains`: a file of an agent's workspace after its run."""

    type: Literal["file_exists", "file_contains"]
    path: str
    """Relative to the workspace, `/`-separated; it may not leave the workspace."""
    value: str | None = None
    """`file_contains`: the text the file must hold."""

    @field_validator("path")
    @classmethod
    def _inside_the_workspace(cls, path: str) -> str:
        parts = path.replace("\\", "/").split("/")
        if not path.strip() or path.startswith(("/", "~")) or ".." in parts:
            raise ValueError(
                f"path {path!r} must be relative to the agent's workspace and stay inside it"
            )
        return path

    @model_validator(mode="after")
    def _contains_needs_a_value(self) -> WorkspaceFileEvaluator:
        if self.type == "file_contains" and not self.value:
            raise ValueError("file_contains needs `value`: the text the file must hold")
        return self


class WorkspaceCommandEvaluator(_EvaluatorBase):
    """`workspace_command`: a command run in an agent's workspace after its run passes
    when it exits with 0 (a build, the project's tests)."""

    type: Literal["workspace_command"]
    command: str | list[str]
    """A command line (run with `sh -c`) or an argument list (run as it is)."""
    timeout_seconds: Seconds = 60.0

    @field_validator("command")
    @classmethod
    def _not_empty(cls, command: str | list[str]) -> str | list[str]:
        if not (command.strip() if isinstance(command, str) else command and command[0]):
            raise ValueError("command is empty; give the command to run in the workspace")
        return command


class FieldSpec(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    path: str = Field(min_length=1)
    """Dots and [index]: `invoice.items[0].total`."""
    match: Literal["exact", "numeric_tolerance", "date"]
    required: bool = True
    weight: NonNegativeFloat = 1.0
    tolerance: NonNegativeFloat = 0.0
    relative: bool = False
    formats: list[str] = Field(default_factory=list)
    """Date formats (AgentV's `DD/MM/YYYY` and the like): decide day or month first."""


class FieldAccuracyEvaluator(_EvaluatorBase):
    """Fields of the JSON answer against the JSON of the last expected message."""

    type: Literal["field_accuracy"]
    fields: list[FieldSpec] = Field(min_length=1)
    aggregation: Literal["weighted_average", "all_or_nothing"] = "weighted_average"


class LatencyEvaluator(_EvaluatorBase):
    type: Literal["latency"]
    threshold: NonNegativeFloat
    """Milliseconds the provider call may take."""


class CostEvaluator(_EvaluatorBase):
    type: Literal["cost"]
    budget: NonNegativeFloat
    """US dollars, as the provider reports the cost."""


class TokenUsageEvaluator(_EvaluatorBase):
    type: Literal["token_usage"]
    max_total: NonNegativeInt | None = Field(
        default=None, validation_alias=AliasChoices("max_total", "maxTotal")
    )
    max_input: NonNegativeInt | None = Field(
        default=None, validation_alias=AliasChoices("max_input", "maxInput")
    )
    max_output: NonNegativeInt | None = Field(
        default=None, validation_alias=AliasChoices("max_output", "maxOutput")
    )

    @model_validator(mode="after")
    def _some_limit(self) -> TokenUsageEvaluator:
        if (self.max_total, self.max_input, self.max_output) == (None, None, None):
            raise ValueError("set at least one of max_total, max_input, max_output")
        return self


class ExecutionMetricsEvaluator(_EvaluatorBase):
    """AgentV's `execution-metrics`: limits on one run, each a pass or a miss."""

    type: Literal["execution_metrics"]
    max_tool_calls: NonNegativeInt | None = None
    max_llm_calls: NonNegativeInt | None = None
    max_tokens: NonNegativeInt | None = None
    max_cost_usd: NonNegativeFloat | None = None
    max_duration_ms: NonNegativeFloat | None = None


class UnsupportedEvaluator(_EvaluatorBase):
    """An evaluator evalrelay cannot run (AgentV's custom TypeScript assertions): the file
    loads, and the cases using it get an error that says so."""

    type: Literal["unsupported"]
    written_type: str
    why: str


class Aggregator(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    type: Literal["weighted_average", "threshold", "code_judge", "llm_judge"]
    weights: dict[str, NonNegativeFloat] = Field(default_factory=dict)
    """`weighted_average`: member name to weight (default 1)."""
    threshold: float | None = Field(default=None, ge=0.0, le=1.0)
    """`threshold`: the share of members that must pass (default: the pass threshold)."""
    path: str | None = Field(default=None, validation_alias=AliasChoices("path", "script"))
    """`code_judge`: the shell command that reads `{results}` and prints a verdict."""
    prompt: str | None = None
    """`llm_judge`: the judge's instructions; `{{EVALUATOR_RESULTS_JSON}}` is filled in."""
    cwd: str | None = None
    """`code_judge`: where the command runs (default: the eval file's folder)."""

    @model_validator(mode="after")
    def _needs(self) -> Aggregator:
        if self.type == "code_judge" and not self.path:
            raise ValueError("a code_judge aggregator needs `path` (the command to run)")
        return self


class CompositeEvaluator(_EvaluatorBase):
    """Several evaluators, combined by an aggregator into one verdict."""

    type: Literal["composite"]
    evaluators: list[EvaluatorSpec] = Field(min_length=1)
    aggregator: Aggregator = Aggregator(type="weighted_average")


DeterministicSpec = (
    ContainsEvaluator
    | ContainsSomeEvaluator
    | NotContainsEvaluator
    | RegexEvaluator
    | EqualsEvaluator
    | JsonValidEvaluator
    | JsonContainedEvaluator
    | LevenshteinEvaluator
    | SimilarityEvaluator
)
"""The evaluators that need nothing but the answer (and the reference)."""

WorkspaceSpec = WorkspaceFileEvaluator | WorkspaceCommandEvaluator
"""The evaluators that look into an agent's workspace after its run."""

RunMetricsSpec = LatencyEvaluator | CostEvaluator | TokenUsageEvaluator | ExecutionMetricsEvaluator
"""The evaluators that read how the run went (time, tokens, cost, tool calls), not the answer."""


def _script_calling_an_llm(data: Any) -> Any:
    """AgentV can give a `code_judge` script an LLM through a local proxy (`target`).
    evalrelay has none, so such an entry loads as `unsupported`: the file stays valid and
    each case using it ends as an infra error that says why."""
    if not isinstance(data, dict) or data.get("type") not in ("code_judge", "script"):
        return data
    proxy = next((key for key in ("target", "provider") if key in data), None)
    if proxy is None:
        return data
    common = {key: data[key] for key in _EvaluatorBase.model_fields if key in data}
    why = (
        f"`{proxy}` asks for AgentV's proxy that lets a script call an LLM, which evalrelay "
        "does not run; grade with an llm_judge entry instead"
    )
    return {"type": "unsupported", "written_type": data["type"], "why": why, **common}


EvaluatorSpec = Annotated[
    DeterministicSpec
    | CodeEvaluator
    | LlmJudgeEvaluator
    | RubricEvaluator
    | EmbeddingSimilarEvaluator
    | ToolTrajectoryEvaluator
    | TrajectoryAssertion
    | FieldAccuracyEvaluator
    | RunMetricsSpec
    | WorkspaceSpec
    | CompositeEvaluator
    | UnsupportedEvaluator,
    Field(discriminator="type"),
    BeforeValidator(_script_calling_an_llm),
]

CompositeEvaluator.model_rebuild()


def located_evaluators(
    specs: list[EvaluatorSpec], loc: tuple[str | int, ...]
) -> list[tuple[tuple[str | int, ...], EvaluatorSpec]]:
    """Each evaluator (composite members too) with where it is written, for errors."""
    found: list[tuple[tuple[str | int, ...], EvaluatorSpec]] = []
    for i, spec in enumerate(specs):
        found.append(((*loc, i), spec))
        if isinstance(spec, CompositeEvaluator):
            found += located_evaluators(spec.evaluators, (*loc, i, "evaluators"))
    return found


def all_evaluators(specs: list[EvaluatorSpec]) -> list[EvaluatorSpec]:
    """The evaluators and, depth first, the members of composites."""
    return [spec for _, spec in located_evaluators(specs, ())]

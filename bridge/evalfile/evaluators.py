"""Evaluator entries as written in eval files (`evaluators:`); grading itself runs in workers.

Each entry is `{type, name?, weight?, ...}`. AgentV's `llm_judge` and `code` entries
load unchanged.
"""

from __future__ import annotations

import re
import shlex
from typing import Annotated, Any, Literal

from pydantic import (
    AliasChoices,
    BaseModel,
    ConfigDict,
    Field,
    NonNegativeFloat,
    field_validator,
    model_validator,
)

from bridge.evalfile.limits import Seconds


class _EvaluatorBase(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True, populate_by_name=True)

    name: str | None = None
    weight: NonNegativeFloat = 1.0
    negate: bool = False
    """Pass when the check fails: the score becomes 1 - score, hits and misses swap."""


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


REGEX_FLAGS = {"i": re.IGNORECASE, "m": re.MULTILINE, "s": re.DOTALL, "g": 0, "u": 0, "y": 0}
"""JavaScript's flags, as AgentV passes them to `RegExp`; g, u and y change nothing in a test."""


class RegexEvaluator(_EvaluatorBase):
    type: Literal["regex"]
    pattern: str = Field(validation_alias=AliasChoices("pattern", "value"))
    """`value` is AgentV's name for it."""
    flags: str | None = None
    """JavaScript-style flags (`i`, `m`, `s`). Without them `^` and `$` match at every line."""

    @field_validator("flags")
    @classmethod
    def _known_flags(cls, flags: str | None) -> str | None:
        unknown = sorted(set(flags or "") - set(REGEX_FLAGS))
        if unknown:
            raise ValueError(f"unknown regex flag(s) {''.join(unknown)}; use i, m or s")
        return flags

    @model_validator(mode="after")
    def _compiles(self) -> RegexEvaluator:
        try:
            self.compiled()
        except re.error as exc:
            raise ValueError(f"not a valid regular expression ({exc}); fix the pattern") from None
        return self

    def compiled(self) -> re.Pattern[str]:
        flags = re.MULTILINE if self.flags is None else 0
        for letter in self.flags or "":
            flags |= REGEX_FLAGS[letter]
        # JavaScript names a group `(?<name>...)`, Python `(?P<name>...)`.
        return re.compile(re.sub(r"\(\?<(?=[A-Za-z_])", "(?P<", self.pattern), flags)


class EqualsEvaluator(_EvaluatorBase):
    type: Literal["equals"]
    value: str


class JsonValidEvaluator(_EvaluatorBase):
    type: Literal["json_valid"]


class SimilarityEvaluator(_EvaluatorBase):
    """Similarity of the answer to the reference answer from `expected_messages`."""

    type: Literal["similarity", "expected_messages"]


class CodeEvaluator(_EvaluatorBase):
    """`code` (evalrelay's, and AgentV's 2025 name) or `code_judge` (AgentV's 2026 one)."""

    type: Literal["code", "code_judge"]
    script: str | list[str]
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
        if not isinstance(data, dict) or data.get("type") != "code_judge":
            return data
        if "target" in data:
            raise ValueError(
                "code_judge `target` (AgentV's proxy that lets a script call an LLM) is not "
                "supported; grade with an llm_judge entry instead"
            )
        own = set(cls.model_fields)
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


class LlmJudgeEvaluator(_EvaluatorBase):
    type: Literal["llm_judge"]
    target: str | None = None
    """The judge target; defaults to the candidate target's `judge_target`."""
    prompt: str | None = None
    """Inline judge instructions, or the path of a file holding them (read when the
    campaign is planned, so workers need nothing from the submitting machine)."""


DeterministicSpec = (
    ContainsEvaluator
    | ContainsSomeEvaluator
    | NotContainsEvaluator
    | RegexEvaluator
    | EqualsEvaluator
    | JsonValidEvaluator
    | SimilarityEvaluator
)
"""The evaluators that need nothing but the answer (and the reference)."""

EvaluatorSpec = Annotated[
    DeterministicSpec | CodeEvaluator | LlmJudgeEvaluator,
    Field(discriminator="type"),
]

"""The JSON an evaluator script or a judge returns, checked before it counts."""

from __future__ import annotations

import json
from typing import Any, TypeVar

from pydantic import AliasChoices, BaseModel, ConfigDict, Field, ValidationError, model_validator

M = TypeVar("M", bound=BaseModel)


class Verdict(BaseModel):
    """A judge's or script's reply. promptfoo's shape (`pass`, `score`, `reason`) is read
    too: a `pass` without a score scores 1 or 0, as promptfoo scores it."""

    model_config = ConfigDict(extra="ignore", populate_by_name=True)

    score: float = Field(ge=0.0, le=1.0)
    passed: bool | None = Field(default=None, alias="pass")
    hits: list[str] = Field(default_factory=list)
    misses: list[str] = Field(default_factory=list)
    reasoning: str | None = Field(
        default=None, validation_alias=AliasChoices("reasoning", "reason")
    )

    @model_validator(mode="before")
    @classmethod
    def _score_from_pass(cls, data: Any) -> Any:
        if isinstance(data, dict) and "score" not in data and isinstance(data.get("pass"), bool):
            return {**data, "score": float(data["pass"])}
        return data


class RubricCheck(BaseModel):
    model_config = ConfigDict(extra="ignore")

    id: str
    satisfied: bool
    reasoning: str | None = None


class RubricVerdict(BaseModel):
    """A rubric judge's reply: one check per criterion."""

    model_config = ConfigDict(extra="ignore")

    checks: list[RubricCheck] = Field(min_length=1)
    overall_reasoning: str | None = None


class ScriptCheck(BaseModel):
    model_config = ConfigDict(extra="ignore", populate_by_name=True)

    text: str = ""
    passed: bool = Field(default=False, alias="pass")
    score: float | None = Field(default=None, ge=0.0, le=1.0)


class ScriptReply(BaseModel):
    """What an AgentV `script` grader prints (July 2026): any of pass, score, checks."""

    model_config = ConfigDict(extra="ignore", populate_by_name=True)

    passed: bool | None = Field(default=None, alias="pass")
    score: float | None = None
    checks: list[ScriptCheck] = Field(default_factory=list)
    reason: str | None = None
    reasoning: str | None = None
    hits: list[str] = Field(default_factory=list)
    misses: list[str] = Field(default_factory=list)


def parse_verdict(text: str) -> Verdict:
    """The verdict in `text` (JSON, or the first {...} in it); ValueError saying what is wrong."""
    return parse_json_reply(text, Verdict)


def parse_rubric_verdict(text: str) -> RubricVerdict:
    return parse_json_reply(text, RubricVerdict)


def outermost_braces(text: str) -> str | None:
    """From the first `{` to the last `}`: what `re.search(r"\\{.*\\}", text, re.DOTALL)`
    finds, in linear time (the regex takes quadratic time on a text of many `{`)."""
    start, end = text.find("{"), text.rfind("}")
    return text[start : end + 1] if start != -1 and end > start else None


def parse_json_reply(text: str, model: type[M]) -> M:
    candidates = [text.strip()]
    braces = outermost_braces(text)
    if braces is not None:
        candidates.append(braces)
    problem = "no JSON object in the reply"
    for candidate in candidates:
        try:
            data = json.loads(candidate)
        except json.JSONDecodeError:
            continue
        try:
            return model.model_validate(data)
        except ValidationError as exc:
            first = exc.errors()[0]
            where = ".".join(str(p) for p in first["loc"]) or "reply"
            problem = f"{where}: {first['msg']}"
    raise ValueError(problem)

"""`field_accuracy`: fields of the JSON answer against the JSON of the reference answer.

As AgentV scores it: a field is exact (JSON equality), a number within a tolerance
(absolute or relative), or a date on the same day; a required field that is missing is a
miss, an optional one is left out of the score. Paths use dots and `[index]`.
"""

from __future__ import annotations

import json
import re
from datetime import date, datetime
from typing import Any

from evalrelay.bridge.evalfile.evaluators import FieldAccuracyEvaluator, FieldSpec
from evalrelay.bridge.results.result import EvaluatorResult
from evalrelay.worker.grading.trajectory import same
from evalrelay.worker.grading.verdict import outermost_braces

MISSING = object()
MONTHS = {
    name: n
    for n, names in enumerate(
        [("jan", "january"), ("feb", "february"), ("mar", "march"), ("apr", "april"),
         ("may",), ("jun", "june"), ("jul", "july"), ("aug", "august"),
         ("sep", "sept", "september"), ("oct", "october"), ("nov", "november"),
         ("dec", "december")],
        start=1,
    )
    for name in names
}  # fmt: skip


def field_accuracy(
    spec: FieldAccuracyEvaluator, name: str, answer: str, reference: str | None
) -> EvaluatorResult:
    def verdict(score: float, hits: list[str], misses: list[str], why: str) -> EvaluatorResult:
        return EvaluatorResult(
            name=name,
            type=spec.type,
            score=round(score, 6),
            weight=spec.weight,
            hits=hits[:4],
            misses=misses[:4],
            reasoning=why,
        )

    got = json_in(answer)
    if got is MISSING:
        return verdict(0.0, [], ["Failed to parse candidate answer as JSON"], "Not valid JSON")
    want = json_in(reference or "")
    if want is MISSING:
        return verdict(
            0.0, [], ["No expected data found in the reference answer"],
            "The last expected message holds no JSON to compare with",
        )  # fmt: skip
    scored = [
        _field(field, resolve(got, field.path), resolve(want, field.path)) for field in spec.fields
    ]
    hits = [text for ok, _, _, text in scored if ok]
    misses = [text for ok, _, _, text in scored if not ok]
    if spec.aggregation == "all_or_nothing":
        score = 0.0 if misses else 1.0
    else:
        total = sum(weight for _, _, weight, _ in scored)
        score = sum(s * weight for _, s, weight, _ in scored) / total if total else 0.0
    return verdict(score, hits, misses, f"{len(hits)}/{len(spec.fields)} fields matched")


def json_in(text: str) -> Any:
    """The JSON value in `text`, fenced or not, or the outermost {...} in it; else MISSING."""
    cleaned = re.sub(r"```(?:json)?\n?", "", text).strip()
    for candidate in (cleaned, outermost_braces(cleaned)):
        if candidate:
            try:
                return json.loads(candidate)
            except json.JSONDecodeError:
                pass
    return MISSING


def resolve(value: Any, path: str) -> Any:
    for part in (p for p in re.split(r"[.\[\]]", path) if p):
        if isinstance(value, list) and part.isdigit() and int(part) < len(value):
            value = value[int(part)]
        elif isinstance(value, dict) and part in value:
            value = value[part]
        else:
            return MISSING
    return value


def _field(field: FieldSpec, got: Any, want: Any) -> tuple[bool, float, float, str]:
    """(hit, score, weight, text)."""
    path = field.path
    if want is MISSING:
        return True, 1.0, field.weight, f"{path}: no expected value"
    if got is MISSING:
        if field.required:
            return False, 0.0, field.weight, f"{path} (required, missing)"
        return True, 1.0, 0.0, f"{path}: optional field missing"
    if field.match == "exact":
        if same(got, want):
            return True, 1.0, field.weight, path
        if _js_type(got) != _js_type(want):
            why = f"type mismatch: got {_js_type(got)}, expected {_js_type(want)}"
            return False, 0.0, field.weight, f"{path} ({why})"
        return False, 0.0, field.weight, f"{path} (value mismatch)"
    if field.match == "numeric_tolerance":
        a, b = _number(got), _number(want)
        if a is None or b is None:
            return False, 0.0, field.weight, f"{path} (non-numeric value)"
        diff = abs(a - b)
        off = diff / abs(b) if field.relative and b else diff
        if off <= field.tolerance:
            return True, 1.0, field.weight, f"{path} (within tolerance: diff={diff:.2f})"
        text = f"{path} (outside tolerance: diff={diff:.2f}, tolerance={field.tolerance:g})"
        return False, 0.0, field.weight, text
    a_day, b_day = parse_date(str(got), field.formats), parse_date(str(want), field.formats)
    if a_day is None or b_day is None:
        side = "candidate" if a_day is None else "expected"
        return False, 0.0, field.weight, f"{path} (unparseable {side} date)"
    if a_day == b_day:
        return True, 1.0, field.weight, path
    return False, 0.0, field.weight, f"{path} (date mismatch: got {a_day}, expected {b_day})"


def _js_type(value: Any) -> str:
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, (int, float)):
        return "number"
    if isinstance(value, str):
        return "string"
    return "object"


def _number(value: Any) -> float | None:
    if isinstance(value, bool):
        return None
    if isinstance(value, (int, float)):
        return float(value)
    if isinstance(value, str):
        match = re.match(r"\s*[-+]?(\d+\.?\d*|\.\d+)([eE][-+]?\d+)?", value)
        return float(match.group(0)) if match else None
    return None


def parse_date(text: str, formats: list[str]) -> date | None:
    """ISO dates and times, `15-JAN-2025`, `Jan 15, 2025`, and `nn/nn/yyyy` (month first
    unless `formats` are only day-first, or the first number cannot be a month)."""
    text = text.strip()
    try:
        return datetime.fromisoformat(text.replace("Z", "+00:00")).date()
    except ValueError:
        pass
    if m := re.fullmatch(r"(\d{1,2})-([A-Za-z]{3,9})-(\d{4})", text):
        month = MONTHS.get(m.group(2).lower())
        return _day(int(m.group(3)), month, int(m.group(1))) if month else None
    if m := re.fullmatch(r"([A-Za-z]{3,9})\.? (\d{1,2}),? (\d{4})", text):
        month = MONTHS.get(m.group(1).lower())
        return _day(int(m.group(3)), month, int(m.group(2))) if month else None
    if m := re.fullmatch(r"(\d{1,2})[/-](\d{1,2})[/-](\d{4})", text):
        first, second, year = int(m.group(1)), int(m.group(2)), int(m.group(3))
        day_first = [f for f in formats if f.upper().startswith("DD")]
        month_first = [f for f in formats if f.upper().startswith("MM")]
        if (day_first and not month_first) or (first > 12 and second <= 12):
            return _day(year, second, first)
        return _day(year, first, second)
    return None


def _day(year: int, month: int, day: int) -> date | None:
    try:
        return date(year, month, day)
    except ValueError:
        return None

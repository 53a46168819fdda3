"""`field_accuracy`: exact, numeric and date fields, required and optional, both aggregations."""

from __future__ import annotations

import json
from datetime import date
from typing import Any

import pytest

from evalrelay.bridge.evalfile.evaluators import FieldAccuracyEvaluator
from evalrelay.worker.grading.fields import field_accuracy, parse_date

REFERENCE = json.dumps(
    {"invoice": {"id": "A-1", "total": 100.0, "due": "2025-01-15", "lines": [{"qty": 2}]}}
)


def spec(fields: list[dict[str, Any]], **extra: Any) -> FieldAccuracyEvaluator:
    return FieldAccuracyEvaluator.model_validate(
        {"type": "field_accuracy", "fields": fields, **extra}
    )


FIELDS = [
    {"path": "invoice.id", "match": "exact"},
    {"path": "invoice.total", "match": "numeric_tolerance", "tolerance": 0.05, "relative": True},
    {"path": "invoice.due", "match": "date", "weight": 2},
    {"path": "invoice.lines[0].qty", "match": "exact"},
    {"path": "invoice.note", "match": "exact", "required": False},
]


def test_weighted_average_over_the_fields() -> None:
    answer = (
        '```json\n{"invoice": {"id": "A-1", "total": "103.5", "due": "01/15/2025",'
        ' "lines": [{"qty": "2"}]}}\n```'
    )
    result = field_accuracy(spec(FIELDS), "f", answer, REFERENCE)
    # id 1, total 1 (3.5% off), due 1 (weight 2), qty 0 ("2" is not 2); note: no expected value.
    assert result.score == pytest.approx(5 / 6)  # (1 + 1 + 2 + 0 + 1) / 6
    assert result.misses == ["invoice.lines[0].qty (type mismatch: got string, expected number)"]
    assert result.reasoning == "4/5 fields matched"


def test_all_or_nothing_and_a_missing_required_field() -> None:
    answer = json.dumps({"invoice": {"id": "A-1", "total": 100}})
    result = field_accuracy(
        spec(FIELDS[:2] + FIELDS[3:4], aggregation="all_or_nothing"), "f", answer, REFERENCE
    )
    assert result.score == 0.0
    assert result.misses == ["invoice.lines[0].qty (required, missing)"]


def test_an_answer_that_is_not_json_scores_zero() -> None:
    result = field_accuracy(spec(FIELDS), "f", "no json here", REFERENCE)
    assert (result.score, result.misses) == (0.0, ["Failed to parse candidate answer as JSON"])


@pytest.mark.parametrize(
    ("text", "formats", "day"),
    [
        ("2025-01-15T10:00:00Z", [], date(2025, 1, 15)),
        ("15-JAN-2025", [], date(2025, 1, 15)),
        ("Jan 15, 2025", [], date(2025, 1, 15)),
        ("03/04/2025", [], date(2025, 3, 4)),  # month first by default
        ("03/04/2025", ["DD/MM/YYYY"], date(2025, 4, 3)),
        ("15/01/2025", [], date(2025, 1, 15)),  # 15 cannot be a month
        ("31/31/2025", [], None),
    ],
)
def test_dates(text: str, formats: list[str], day: date | None) -> None:
    assert parse_date(text, formats) == day

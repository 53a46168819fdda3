"""The deterministic evaluators, each against answers checked by hand."""

from __future__ import annotations

import pytest
from pydantic import TypeAdapter, ValidationError

from bridge.evalfile.evaluators import (
    ContainsEvaluator,
    EqualsEvaluator,
    EvaluatorSpec,
    JsonValidEvaluator,
    NotContainsEvaluator,
    RegexEvaluator,
    SimilarityEvaluator,
)
from worker.grading.checks import check, token_f1
from worker.grading.errors import GradingError


@pytest.mark.parametrize(
    ("spec", "answer", "score"),
    [
        (ContainsEvaluator(type="contains", value="Paris"), "It is Paris.", 1.0),
        (ContainsEvaluator(type="contains", value="Paris"), "It is paris.", 0.0),  # case counts
        (NotContainsEvaluator(type="not_contains", value="London"), "Paris", 1.0),
        (NotContainsEvaluator(type="not_contains", value="London"), "London, no: Paris", 0.0),
        (RegexEvaluator(type="regex", pattern=r"^\d{4}$"), "text\n1789\nmore", 1.0),
        (RegexEvaluator(type="regex", pattern=r"^\d{4}$"), "in 1789.", 0.0),
        (EqualsEvaluator(type="equals", value="42"), "  42\n", 1.0),  # outer space ignored
        (EqualsEvaluator(type="equals", value="42"), "42.", 0.0),
        (JsonValidEvaluator(type="json_valid"), '{"a": [1, 2]}', 1.0),
        (JsonValidEvaluator(type="json_valid"), '```json\n{"a": 1}\n```', 1.0),
        (JsonValidEvaluator(type="json_valid"), "{'a': 1}", 0.0),
    ],
)
def test_checks_score_one_or_zero(spec: object, answer: str, score: float) -> None:
    result = check(spec, "x", answer, None)  # type: ignore[arg-type]
    assert result.score == score
    assert (result.hits if score else result.misses) and not (
        result.misses if score else result.hits
    )


def test_json_miss_says_where_the_answer_broke() -> None:
    result = check(JsonValidEvaluator(type="json_valid"), "j", '{"a": 1,}', None)
    assert result.misses == [
        "answer is valid JSON (Expecting property name enclosed in double quotes at line 1)"
    ]


def test_similarity_is_word_overlap_f1_with_the_reference() -> None:
    # answer: the cat sat (3 words); reference: the cat sat down (4): 3 in common.
    # precision 3/3, recall 3/4, F1 = 2 * 1 * 0.75 / 1.75 = 0.857142...
    assert token_f1("The cat sat.", "the cat sat down") == pytest.approx(6 / 7)
    assert token_f1("dog", "the cat") == 0.0
    assert token_f1("", "") == 1.0
    result = check(
        SimilarityEvaluator(type="expected_messages"), "s", "The cat sat.", "the cat sat down"
    )
    assert result.score == 0.8571 and result.reasoning is not None


def test_similarity_without_a_reference_is_a_grading_error() -> None:
    with pytest.raises(GradingError, match="no expected_messages"):
        check(SimilarityEvaluator(type="similarity"), "s", "answer", None)


def test_invalid_regex_is_refused_before_any_job_carries_it() -> None:
    with pytest.raises(ValidationError, match=r"not a valid regular expression"):
        RegexEvaluator(type="regex", pattern="(")


@pytest.mark.parametrize(
    ("entry", "answer", "score"),
    [
        ({"type": "icontains", "value": "PARIS"}, "it is paris", 1.0),
        ({"type": "icontains", "value": "Rome"}, "it is paris", 0.0),
        ({"type": "starts_with", "value": " The "}, "  The answer", 1.0),
        ({"type": "starts_with", "value": "answer"}, "The answer", 0.0),
        ({"type": "ends_with", "value": "done."}, "All done.\n", 1.0),
        ({"type": "contains_any", "value": ["cat", "dog"]}, "a dog", 1.0),
        ({"type": "contains_any", "value": "cat, dog"}, "a Dog", 0.0),
        ({"type": "icontains_any", "value": "cat, dog"}, "a Dog", 1.0),
        ({"type": "contains_all", "value": ["a", "b"]}, "a and b", 1.0),
        ({"type": "contains_all", "value": ["a", "z"]}, "a and b", 0.0),
        ({"type": "icontains_all", "value": ["A", "B"]}, "a and b", 1.0),
        ({"type": "regex", "value": "^yes$", "flags": ""}, "well\nyes", 0.0),  # JS: no m flag
        ({"type": "regex", "value": "^yes$", "flags": "m"}, "well\nyes", 1.0),
        ({"type": "regex", "value": "YES", "flags": "i"}, "yes", 1.0),
        ({"type": "regex", "value": r"(?<n>\d+) apples"}, "3 apples", 1.0),
    ],
)
def test_agentv_string_checks(entry: dict[str, object], answer: str, score: float) -> None:
    spec = TypeAdapter(EvaluatorSpec).validate_python(entry)
    assert check(spec, "x", answer, None).score == score  # type: ignore[arg-type]


def test_contains_all_names_what_is_missing() -> None:
    spec = TypeAdapter(EvaluatorSpec).validate_python({"type": "contains_all", "value": ["a", "z"]})
    assert check(spec, "x", "a b", None).misses == [  # type: ignore[arg-type]
        "answer contains all of 'a', 'z'; missing 'z'"
    ]


def test_unknown_regex_flag_is_refused() -> None:
    with pytest.raises(ValidationError, match="unknown regex flag"):
        RegexEvaluator(type="regex", pattern="a", flags="q")

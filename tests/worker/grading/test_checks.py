"""The deterministic evaluators, each against answers checked by hand."""

from __future__ import annotations

import itertools
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
from pydantic import TypeAdapter, ValidationError

from evalrelay.bridge.evalfile.evaluators import (
    ContainsEvaluator,
    EqualsEvaluator,
    EvaluatorSpec,
    JsonValidEvaluator,
    NotContainsEvaluator,
    RegexEvaluator,
    SimilarityEvaluator,
)
from evalrelay.worker.grading.checks import check, edit_distance, token_f1
from evalrelay.worker.grading.deadline import Deadline
from evalrelay.worker.grading.errors import GradingError
from evalrelay.worker.grading.grade import grade
from tests.conftest import WriteFiles, direct_job, embedded_env, read_jsonl


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
        "answer is not valid JSON (Expecting property name enclosed in double quotes at line 1)"
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
        "answer does not contain 'z' (all of 'a', 'z' are required)"
    ]


def test_unknown_regex_flag_is_refused() -> None:
    with pytest.raises(ValidationError, match="unknown regex flag"):
        RegexEvaluator(type="regex", pattern="a", flags="q")


# Each check once passing and once failing: (entry, passing answer, hit, failing answer, miss).
SAID = [
    ({"type": "contains", "value": "Ada"}, "Ada Lovelace", "answer contains 'Ada'",
     "Grace Hopper", "answer does not contain 'Ada'"),
    ({"type": "not_contains", "value": "Ada"}, "Grace", "answer does not contain 'Ada'",
     "Ada", "answer contains 'Ada'"),
    ({"type": "icontains", "value": "ADA"}, "ada", "answer contains 'ADA' (ignoring case)",
     "Grace", "answer does not contain 'ADA', even ignoring case"),
    ({"type": "starts_with", "value": "Ada"}, "Ada L.", "answer starts with 'Ada'",
     "It is Ada", "answer does not start with 'Ada'"),
    ({"type": "ends_with", "value": "Ada"}, "It is Ada", "answer ends with 'Ada'",
     "Ada L.", "answer does not end with 'Ada'"),
    ({"type": "contains_any", "value": ["Ada", "Grace"]}, "Grace H.",
     "answer contains 'Grace', one of 'Ada', 'Grace'", "Alan",
     "answer contains none of 'Ada', 'Grace'"),
    ({"type": "icontains_any", "value": ["ADA", "GRACE"]}, "grace",
     "answer contains 'GRACE', one of 'ADA', 'GRACE' (ignoring case)", "Alan",
     "answer contains none of 'ADA', 'GRACE', even ignoring case"),
    ({"type": "contains_all", "value": ["Ada", "Grace"]}, "Ada, Grace",
     "answer contains all of 'Ada', 'Grace'", "Ada",
     "answer does not contain 'Grace' (all of 'Ada', 'Grace' are required)"),
    ({"type": "icontains_all", "value": ["ADA", "GRACE"]}, "ada, grace",
     "answer contains all of 'ADA', 'GRACE' (ignoring case)", "Alan",
     "answer does not contain 'ADA', 'GRACE', even ignoring case "
     "(all of 'ADA', 'GRACE' are required)"),
    ({"type": "regex", "value": "^A"}, "Ada", "answer matches /^A/",
     "Grace", "answer does not match /^A/"),
    ({"type": "equals", "value": "Ada"}, " Ada\n", "answer equals 'Ada'",
     "Ada L.", "answer does not equal 'Ada'"),
    ({"type": "json_valid"}, "[1]", "answer is valid JSON",
     "[1,", "answer is not valid JSON (Expecting value at line 1)"),
]  # fmt: skip


@pytest.mark.parametrize(("entry", "passing", "hit", "failing", "miss"), SAID)
def test_a_miss_says_what_is_wrong_and_a_hit_what_is_right(
    entry: dict[str, object], passing: str, hit: str, failing: str, miss: str
) -> None:
    spec = TypeAdapter(EvaluatorSpec).validate_python(entry)
    passed = check(spec, "x", passing, None)  # type: ignore[arg-type]
    failed = check(spec, "x", failing, None)  # type: ignore[arg-type]
    assert (passed.score, passed.hits, passed.misses) == (1.0, [hit], [])
    assert (failed.score, failed.hits, failed.misses) == (0.0, [], [miss])


ABSENT_CLAIMS = {
    "contains_any": "answer contains one of 'Ada', 'Grace'",
    "icontains_any": "answer contains one of 'ADA', 'GRACE' (ignoring case)",
}
"""What an `_any` check claims when no value was found: no value to name."""


@pytest.mark.parametrize(("entry", "passing", "hit", "failing", "miss"), SAID)
def test_a_negated_check_states_the_claim_it_forbids_both_ways(
    entry: dict[str, object], passing: str, hit: str, failing: str, miss: str
) -> None:
    """`negate` swaps hits and misses in `grade.negated`, whose prefixes are written around
    the check's claim: never "not so, as required: answer does not contain 'Ada'"."""
    spec = TypeAdapter(EvaluatorSpec).validate_python({**entry, "negate": True})
    holds = grade(direct_job(evaluators=[spec]), passing)
    lacks = grade(direct_job(evaluators=[spec]), failing)
    assert holds is not None and (holds.score, holds.hits) == (0.0, [])
    assert holds.misses == [f"must not hold, but does: {hit}"]
    claim = ABSENT_CLAIMS.get(str(entry["type"]), hit)
    assert lacks is not None and (lacks.score, lacks.misses) == (1.0, [])
    assert lacks.hits == [f"not so, as required: {claim}"]


def test_an_empty_answer_shares_no_word_with_a_reference() -> None:
    assert token_f1("", "Paris") == 0.0
    assert token_f1("Paris", "") == 0.0


def test_icontains_folds_the_answer_and_the_value() -> None:
    spec = TypeAdapter(EvaluatorSpec).validate_python({"type": "icontains", "value": "paris"})
    assert check(spec, "x", "IT IS PARIS", None).score == 1.0  # type: ignore[arg-type]
    assert check(spec, "x", "It is Rome", None).score == 0.0  # type: ignore[arg-type]


def test_equals_strips_the_expected_value_too() -> None:
    assert check(EqualsEvaluator(type="equals", value=" 42\n"), "x", "42", None).score == 1.0


def test_multi_line_json_in_a_code_fence_is_valid() -> None:
    fenced = '```json\n{\n  "a": [1,\n        2]\n}\n```\n'
    assert check(JsonValidEvaluator(type="json_valid"), "j", fenced, None).score == 1.0
    assert check(JsonValidEvaluator(type="json_valid"), "j", "```\n[1,\n2\n```", None).score == 0.0


def test_a_regex_search_lets_the_other_threads_run() -> None:
    """The lease heartbeat and a worker's other jobs go on while a regex backtracks: the
    search lets go of the GIL (`concurrent=True`); holding it, this thread would stand
    still until the deadline."""
    spec = RegexEvaluator(type="regex", pattern=r"^(a|aa)+$")
    outcome: list[object] = []

    def search() -> None:
        try:
            check(spec, "r", "a" * 60 + "!", None, Deadline.after(1.0))
        except GradingError as exc:
            outcome.append(exc)

    searching = threading.Thread(target=search)
    ticks = [time.monotonic()]
    searching.start()
    while searching.is_alive():
        time.sleep(0.01)
        ticks.append(time.monotonic())
    assert outcome and "backtracks without end" in str(outcome[0])
    assert ticks[-1] - ticks[0] >= 0.9  # the search ran to its deadline
    assert max(b - a for a, b in itertools.pairwise(ticks)) < 0.5


def test_contains_json_says_which_schema_rule_no_object_meets() -> None:
    schema = {"type": "object", "required": ["answer"]}
    spec = TypeAdapter(EvaluatorSpec).validate_python({"type": "contains_json", "schema": schema})
    passed = check(spec, "x", 'so {"q": 1} then {"answer": 2', None)  # type: ignore[arg-type]
    assert passed.score == 1.0  # the second object, its brace never closed, conforms
    failed = check(spec, "x", 'only {"q": 1} here', None)  # type: ignore[arg-type]
    assert failed.misses == [
        "answer contains no JSON that conforms to the schema "
        "(the object: 'answer' is a required property)"
    ]


def test_contains_json_refuses_yaml_aliases_in_an_answer() -> None:
    bomb = '{"a": &a [1, 1], "b": [*a, *a]}'
    spec = TypeAdapter(EvaluatorSpec).validate_python({"type": "contains_json"})
    assert check(spec, "x", bomb, None).score == 0.0  # type: ignore[arg-type]


def test_an_invalid_contains_json_schema_is_refused_at_load() -> None:
    with pytest.raises(ValidationError, match="not a valid JSON Schema"):
        TypeAdapter(EvaluatorSpec).validate_python(
            {"type": "contains_json", "schema": {"type": "objekt"}}
        )


@pytest.mark.parametrize(("a", "b", "limit", "want"), [
    ("kitten", "sitting", 3, 3), ("kitten", "sitting", 2, 3), ("", "abc", 5, 3),
    ("abc", "abc", 0, 0), ("a" * 5000, "a" * 4999 + "b", 1, 1), ("ab", "ba", 1, 2),
])  # fmt: skip
def test_edit_distance_counts_up_to_one_past_the_limit(
    a: str, b: str, limit: int, want: int
) -> None:
    assert edit_distance(a, b, limit) == want


def test_levenshtein_miss_says_it_is_beyond_the_threshold() -> None:
    spec = TypeAdapter(EvaluatorSpec).validate_python(
        {"type": "levenshtein", "value": "sitting", "threshold": 2}
    )
    assert check(spec, "x", "kitten", None).misses == [  # type: ignore[arg-type]
        "answer is more than 2 edit(s) from 'sitting'"
    ]


def test_levenshtein_on_a_long_answer_with_a_huge_threshold_ends_within_seconds() -> None:
    """The issue's attack: 60,000 characters each way and a threshold past both, which
    the banded Python loop computed cell by cell for hours on the event loop."""
    spec = TypeAdapter(EvaluatorSpec).validate_python(
        {"type": "levenshtein", "value": "y" * 60_000, "threshold": 10**9}
    )
    started = time.monotonic()
    finding = check(spec, "x", "x" * 60_000, None)  # type: ignore[arg-type]
    assert time.monotonic() - started < 10
    assert finding.score == 1.0
    assert finding.hits == [f"answer is 60000 edit(s) from {'y' * 60_000!r}, within 1000000000"]


def test_levenshtein_past_its_length_bound_is_a_miss_saying_so() -> None:
    spec = TypeAdapter(EvaluatorSpec).validate_python({"type": "levenshtein", "value": "a"})
    finding = check(spec, "x", "a" * 100_001, None)  # type: ignore[arg-type]
    assert finding.score == 0.0
    assert finding.misses == [
        "answer is too long to compare by edits (100001 characters; levenshtein compares "
        "100000 at most)"
    ]


def test_a_long_levenshtein_holds_up_no_other_job_of_a_real_run(
    project: WriteFiles, private_home: Path
) -> None:
    """A real `evalrelay run`: one case compares a 60,000-character answer with a huge
    threshold, twenty others are plain; all end, within seconds."""
    long_answer = "x" * 60_000
    plain = "".join(
        f"  - {{id: plain-{i}, input_messages: [{{role: user, content: q}}]}}\n" for i in range(20)
    )
    root = project(
        {
            "targets.yaml": "targets:\n  - {name: t, provider: mock, response: '${ANSWER}'}\n",
            "evals.yaml": (
                "evalcases:\n"
                "  - id: long\n"
                "    input_messages: [{role: user, content: q}]\n"
                f"    evaluators: [{{type: levenshtein, value: {'y' * 60_000}, "
                "threshold: 1000000000}]\n" + plain
            ),
        }
    )
    started = time.monotonic()
    done = subprocess.run(
        [sys.executable, "-m", "evalrelay", "run", "evals.yaml", "--target", "t"],
        cwd=root,
        env=embedded_env(private_home) | {"ANSWER": long_answer},
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert time.monotonic() - started < 60
    lines = read_jsonl(next((root / "results").glob("*.jsonl")))
    assert len(lines) == 21
    (long,) = [line for line in lines if line["case_id"] == "long"]
    assert long["score"] == 1.0 and long["status"] == "ok"

"""The deterministic evaluators: string checks, JSON validity, similarity to the reference."""

from __future__ import annotations

import json
import re
from collections import Counter
from typing import NamedTuple

from evalrelay.bridge.evalfile.evaluators import (
    ContainsEvaluator,
    ContainsSomeEvaluator,
    DeterministicSpec,
    EqualsEvaluator,
    JsonContainedEvaluator,
    JsonValidEvaluator,
    LevenshteinEvaluator,
    NotContainsEvaluator,
    RegexEvaluator,
    SimilarityEvaluator,
)
from evalrelay.bridge.results.result import EvaluatorResult
from evalrelay.worker.grading.deadline import Deadline
from evalrelay.worker.grading.errors import GradingError
from evalrelay.worker.grading.json_in_text import json_objects, schema_errors

_WORD = re.compile(r"\w+")


class Finding(NamedTuple):
    """What a check found, and both ways of saying it about this answer."""

    passed: bool
    hit: str
    """What the answer does right, said when the check passes."""
    miss: str
    """What is wrong with the answer, said when the check fails."""


def check(
    spec: DeterministicSpec,
    name: str,
    answer: str,
    reference: str | None,
    deadline: Deadline | None = None,
) -> EvaluatorResult:
    if isinstance(spec, SimilarityEvaluator):
        return _similarity(spec, name, answer, reference)
    if isinstance(spec, RegexEvaluator):
        return _verdict(spec, name, _regex(spec, name, answer, deadline))
    return _verdict(spec, name, _finding(spec, answer))


def _regex(spec: RegexEvaluator, name: str, answer: str, deadline: Deadline | None) -> Finding:
    """The search stops at the grading deadline, and lets go of the GIL while it runs (the
    lease heartbeat and the worker's other jobs go on)."""
    pattern = f"/{spec.pattern}/{spec.flags or ''}"
    seconds = deadline.left(name) if deadline else None
    try:
        found = spec.compiled().search(answer, timeout=seconds, concurrent=True) is not None
    except TimeoutError:
        assert deadline is not None  # no time limit, no TimeoutError
        raise GradingError(
            f"{deadline.overrun(name)} while the regex {pattern} was still matching: it "
            "backtracks without end on this answer; rewrite it without nested repetition "
            "such as (a|aa)+"
        ) from None
    return Finding(found, f"matches {pattern}", f"does not match {pattern}")


def _finding(spec: DeterministicSpec, answer: str) -> Finding:
    if isinstance(spec, ContainsEvaluator):
        return _contains(spec, answer)
    if isinstance(spec, ContainsSomeEvaluator):
        return _contains_some(spec, answer)
    if isinstance(spec, NotContainsEvaluator):
        value = spec.value
        return Finding(value not in answer, f"does not contain {value!r}", f"contains {value!r}")
    if isinstance(spec, EqualsEvaluator):
        value = spec.value
        same = answer.strip() == value.strip()
        return Finding(same, f"equals {value!r}", f"does not equal {value!r}")
    if isinstance(spec, JsonContainedEvaluator):
        return _contains_json(spec, answer)
    if isinstance(spec, LevenshteinEvaluator):
        return _levenshtein(spec, answer)
    assert isinstance(spec, JsonValidEvaluator)
    return _json_valid(answer)


def _contains_json(spec: JsonContainedEvaluator, answer: str) -> Finding:
    """A pass when some object found conforms (any object, without a schema)."""
    found = json_objects(answer)
    if not found:
        return Finding(False, "contains JSON", "contains no JSON object")
    if spec.json_schema is None:
        return Finding(True, "contains JSON", "contains no JSON object")
    why = ""
    for value in found:
        errors = schema_errors(value, spec.json_schema)
        if errors is None:
            return Finding(True, "contains JSON that conforms to the schema", "")
        why = errors
    return Finding(
        False,
        "contains JSON that conforms to the schema",
        f"contains no JSON that conforms to the schema ({why})",
    )


LEVENSHTEIN_CHARS = 100_000
"""The longest answer (and value) `levenshtein` compares: the distance of two such texts
takes rapidfuzz about a second at most, whatever `threshold` a file sets."""


def edit_distance(a: str, b: str, limit: int) -> int:
    """Levenshtein distance, or `limit + 1` when it is more than `limit` (rapidfuzz's
    bit-parallel algorithm, which stops early under a small limit)."""
    from rapidfuzz.distance import Levenshtein  # 40 modules: loaded by the first grade only

    return int(Levenshtein.distance(a, b, score_cutoff=limit))


def _levenshtein(spec: LevenshteinEvaluator, answer: str) -> Finding:
    """promptfoo compares the whole answer, untrimmed, with the value."""
    longest = max(len(answer), len(spec.value))
    if longest > LEVENSHTEIN_CHARS:
        why = (
            f"is too long to compare by edits ({longest} characters; levenshtein compares "
            f"{LEVENSHTEIN_CHARS} at most)"
        )
        return Finding(False, why, why)
    edits = edit_distance(answer, spec.value, spec.threshold)
    return Finding(
        edits <= spec.threshold,
        f"is {edits} edit(s) from {spec.value!r}, within {spec.threshold}",
        f"is more than {spec.threshold} edit(s) from {spec.value!r}",
    )


def _json_valid(answer: str) -> Finding:
    try:
        json.loads(_unfenced(answer))
    except json.JSONDecodeError as exc:
        why = f"is not valid JSON ({exc.msg} at line {exc.lineno})"
        return Finding(False, "is valid JSON", why)
    return Finding(True, "is valid JSON", "is not valid JSON")


def _contains(spec: ContainsEvaluator, answer: str) -> Finding:
    value = spec.value
    if spec.type == "icontains":
        return Finding(
            value.lower() in answer.lower(),
            f"contains {value!r} (ignoring case)",
            f"does not contain {value!r}, even ignoring case",
        )
    if spec.type == "starts_with":
        return Finding(
            answer.strip().startswith(value.strip()),
            f"starts with {value!r}",
            f"does not start with {value!r}",
        )
    if spec.type == "ends_with":
        return Finding(
            answer.strip().endswith(value.strip()),
            f"ends with {value!r}",
            f"does not end with {value!r}",
        )
    return Finding(value in answer, f"contains {value!r}", f"does not contain {value!r}")


def _contains_some(spec: ContainsSomeEvaluator, answer: str) -> Finding:
    fold = spec.type.startswith("i")
    text = answer.lower() if fold else answer
    found = [v for v in spec.value if (v.lower() if fold else v) in text]
    quoted = ", ".join(repr(v) for v in spec.value)
    case, even = (" (ignoring case)", ", even ignoring case") if fold else ("", "")
    if spec.type.endswith("_any"):
        hit = f"contains {found[0]!r}, one of {quoted}" if found else f"contains one of {quoted}"
        return Finding(bool(found), hit + case, f"contains none of {quoted}{even}")
    missing = ", ".join(repr(v) for v in spec.value if v not in found)
    return Finding(
        not missing,
        f"contains all of {quoted}{case}",
        f"does not contain {missing}{even} (all of {quoted} are required)",
    )


def token_f1(answer: str, reference: str) -> float:
    """Word-overlap F1 (case-insensitive bags of words), as in SQuAD-style QA scoring."""
    got, want = Counter(_WORD.findall(answer.lower())), Counter(_WORD.findall(reference.lower()))
    common = sum((got & want).values())
    if not got or not want or not common:
        return 1.0 if not got and not want else 0.0
    precision, recall = common / sum(got.values()), common / sum(want.values())
    return 2 * precision * recall / (precision + recall)


def _similarity(
    spec: SimilarityEvaluator, name: str, answer: str, reference: str | None
) -> EvaluatorResult:
    if reference is None:
        raise GradingError(
            f"evaluator {name}: the case has no expected_messages to compare the answer with"
        )
    score = round(token_f1(answer, reference), 4)
    return EvaluatorResult(
        name=name,
        type=spec.type,
        score=score,
        weight=spec.weight,
        reasoning=f"word-overlap F1 with the reference answer: {score:.2f}",
    )


def _verdict(spec: DeterministicSpec, name: str, finding: Finding) -> EvaluatorResult:
    """A passed check says its hit, a failed one its miss.

    Under `negate`, `grade.negated` swaps hits and misses and prefixes them with "not so,
    as required:" and "must not hold, but does:", phrases written around the check's
    claim: a negated check so says its claim (the hit text) either way, and the result
    reads "not so, as required: answer contains 'x'", never a double negation.
    """
    text = finding.hit if finding.passed or spec.negate else finding.miss
    return EvaluatorResult(
        name=name,
        type=spec.type,
        score=1.0 if finding.passed else 0.0,
        weight=spec.weight,
        hits=[f"answer {text}"] if finding.passed else [],
        misses=[] if finding.passed else [f"answer {text}"],
    )


def _unfenced(answer: str) -> str:
    """The answer without a surrounding ```json fence, which models add out of habit."""
    match = re.fullmatch(r"\s*```[A-Za-z]*\n(.*)\n```\s*", answer, re.DOTALL)
    return match.group(1) if match else answer

"""The deterministic evaluators: string checks, JSON validity, similarity to the reference."""

from __future__ import annotations

import json
import re
from collections import Counter

from bridge.evalfile.evaluators import (
    ContainsEvaluator,
    DeterministicSpec,
    EqualsEvaluator,
    JsonValidEvaluator,
    NotContainsEvaluator,
    RegexEvaluator,
    SimilarityEvaluator,
)
from bridge.results.result import EvaluatorResult
from worker.grading.errors import GradingError

_WORD = re.compile(r"\w+")


def check(
    spec: DeterministicSpec, name: str, answer: str, reference: str | None
) -> EvaluatorResult:
    if isinstance(spec, ContainsEvaluator):
        return _verdict(spec, name, spec.value in answer, f"contains {spec.value!r}")
    if isinstance(spec, NotContainsEvaluator):
        return _verdict(spec, name, spec.value not in answer, f"does not contain {spec.value!r}")
    if isinstance(spec, RegexEvaluator):
        # The pattern compiled when the eval file was loaded.
        found = re.search(spec.pattern, answer, re.MULTILINE) is not None
        return _verdict(spec, name, found, f"matches /{spec.pattern}/")
    if isinstance(spec, EqualsEvaluator):
        return _verdict(spec, name, answer.strip() == spec.value.strip(), f"equals {spec.value!r}")
    if isinstance(spec, JsonValidEvaluator):
        try:
            json.loads(_unfenced(answer))
            valid, why = True, "is valid JSON"
        except json.JSONDecodeError as exc:
            valid, why = False, f"is valid JSON ({exc.msg} at line {exc.lineno})"
        return _verdict(spec, name, valid, why)
    return _similarity(spec, name, answer, reference)


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


def _verdict(spec: DeterministicSpec, name: str, passed: bool, what: str) -> EvaluatorResult:
    return EvaluatorResult(
        name=name,
        type=spec.type,
        score=1.0 if passed else 0.0,
        weight=spec.weight,
        hits=[f"answer {what}"] if passed else [],
        misses=[] if passed else [f"answer {what}"],
    )


def _unfenced(answer: str) -> str:
    """The answer without a surrounding ```json fence, which models add out of habit."""
    match = re.fullmatch(r"\s*```[A-Za-z]*\n(.*)\n```\s*", answer, re.DOTALL)
    return match.group(1) if match else answer

"""The deterministic evaluators: string checks, JSON validity, similarity to the reference."""

from __future__ import annotations

import json
import re
from collections import Counter

from bridge.evalfile.evaluators import (
    ContainsEvaluator,
    ContainsSomeEvaluator,
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
        return _verdict(spec, name, *_contains(spec, answer))
    if isinstance(spec, ContainsSomeEvaluator):
        return _verdict(spec, name, *_contains_some(spec, answer))
    if isinstance(spec, NotContainsEvaluator):
        return _verdict(spec, name, spec.value not in answer, f"does not contain {spec.value!r}")
    if isinstance(spec, RegexEvaluator):
        # The pattern compiled when the eval file was loaded.
        found = spec.compiled().search(answer) is not None
        return _verdict(spec, name, found, f"matches /{spec.pattern}/{spec.flags or ''}")
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


def _contains(spec: ContainsEvaluator, answer: str) -> tuple[bool, str]:
    value = spec.value
    if spec.type == "icontains":
        return value.lower() in answer.lower(), f"contains {value!r} (ignoring case)"
    if spec.type == "starts_with":
        return answer.strip().startswith(value.strip()), f"starts with {value!r}"
    if spec.type == "ends_with":
        return answer.strip().endswith(value.strip()), f"ends with {value!r}"
    return value in answer, f"contains {value!r}"


def _contains_some(spec: ContainsSomeEvaluator, answer: str) -> tuple[bool, str]:
    fold = spec.type.startswith("i")
    text = answer.lower() if fold else answer
    found = [v for v in spec.value if (v.lower() if fold else v) in text]
    quoted = ", ".join(repr(v) for v in spec.value)
    case = " (ignoring case)" if fold else ""
    if spec.type.endswith("_any"):
        return bool(found), f"contains one of {quoted}{case}"
    missing = [repr(v) for v in spec.value if v not in found]
    what = f"contains all of {quoted}{case}"
    return not missing, what if not missing else f"{what}; missing {', '.join(missing)}"


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

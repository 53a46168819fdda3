"""`embedding_similar` (promptfoo's `similar`, `similar:dot`, `similar:euclidean`): the
answer's and each value's embeddings compared, from the OpenAI-compatible `/embeddings`
endpoint of the target the evaluator names. Each text is embedded in a request of its
own, as promptfoo sends them; the answer once."""

from __future__ import annotations

import math
from typing import Any

from evalrelay.bridge.contract.job import Job
from evalrelay.bridge.evalfile.evaluators import EmbeddingSimilarEvaluator
from evalrelay.bridge.results.result import EvaluatorResult
from evalrelay.worker.grading.deadline import Deadline
from evalrelay.worker.grading.errors import GradingError, refuse_unknown_judge
from evalrelay.worker.providers.base import ProviderFailure
from evalrelay.worker.providers.call import target_provider
from evalrelay.worker.providers.openai import OpenAIProvider

EMBEDDING_SECONDS = 60.0


EPSILON = 2.220446049250313e-16
"""JavaScript's Number.EPSILON: promptfoo passes a similarity within it of the threshold."""


def cosine(a: list[float], b: list[float]) -> float:
    norms = math.sqrt(sum(x * x for x in a)) * math.sqrt(sum(y * y for y in b))
    return dot(a, b) / norms if norms else 0.0


def dot(a: list[float], b: list[float]) -> float:
    return sum(x * y for x, y in zip(a, b, strict=True))


def euclidean(a: list[float], b: list[float]) -> float:
    return math.sqrt(sum((x - y) ** 2 for x, y in zip(a, b, strict=True)))


MEASURES = {"cosine": cosine, "dot_product": dot, "euclidean": euclidean}


def judged(spec: EmbeddingSimilarEvaluator, found: float) -> tuple[bool, float]:
    """A value's pass and score as promptfoo's buildSimilarityResult has them: a
    similarity passes at the threshold and is its own score; a euclidean distance passes
    at most at it and scores 1 / (1 + distance)."""
    if spec.measure == "euclidean":
        return found <= spec.threshold + EPSILON, 1 / (1 + found)
    return found >= spec.threshold - EPSILON, found


def similar(
    spec: EmbeddingSimilarEvaluator,
    name: str,
    job: Job,
    answer: str,
    deadline: Deadline | None = None,
) -> EvaluatorResult:
    """Passes when one value reaches the threshold (that value's score is the score),
    else scores the highest; `negate` (promptfoo's `not-similar`) is the grader's, as for
    any evaluator."""
    embed = _embedder(spec, name, job, deadline)
    answered = embed(answer)
    compare = MEASURES[spec.measure]
    best_score, best_found = -math.inf, math.nan
    for value in spec.value:
        found = compare(embed(value), answered)
        passed, score = judged(spec, found)
        if passed:
            return _result(spec, name, found, score, value)
        if score > best_score:
            best_score, best_found = score, found
    return _result(spec, name, best_found, best_score, None)


def _result(
    spec: EmbeddingSimilarEvaluator, name: str, found: float, score: float, to: str | None
) -> EvaluatorResult:
    passed = to is not None
    if spec.measure == "euclidean":
        measured = "distance"
        said = f"distance {found:.3f} {'<=' if passed else '>'} {spec.threshold:g}"
    else:
        measured = "similarity"
        said = f"similarity {found:.3f} {'>=' if passed else '<'} {spec.threshold:g}"
    return EvaluatorResult(
        name=name,
        type=spec.type,
        score=round(min(max(score, 0.0), 1.0), 6),
        weight=spec.weight,
        passed=passed,
        hits=[f"{said} to {to!r}"] if passed else [],
        misses=[] if passed else [f"{said} to every value"],
        details={measured: found, "measure": spec.measure, "target": spec.target},
    )


def _embedder(
    spec: EmbeddingSimilarEvaluator, name: str, job: Job, deadline: Deadline | None
) -> Any:
    refuse_unknown_judge(job.unknown_judges, spec.target, name)
    ref = job.judges.get(spec.target or "")
    if ref is None:
        raise GradingError(f"evaluator {name}: no embedding target '{spec.target}' in the job")
    try:
        provider = target_provider(ref)
    except ProviderFailure as failure:
        raise GradingError(f"evaluator {name}: {failure.message}") from None
    if not isinstance(provider, OpenAIProvider):
        raise GradingError(
            f"evaluator {name}: target '{ref.name}' ({ref.kind}) has no OpenAI-style "
            "embeddings endpoint; name an openai or openai-compatible target"
        )
    try:
        client = provider.connect()
    except ProviderFailure as failure:
        raise GradingError(f"evaluator {name}: {failure.message}") from None

    def embed(text: str) -> list[float]:
        seconds = deadline.within(EMBEDDING_SECONDS, name) if deadline else EMBEDDING_SECONDS
        try:
            # The body promptfoo sends: the SDK's own method adds `encoding_format`.
            made = client.post(
                "/embeddings",
                body={"input": text, "model": provider.model_name()},
                cast_to=object,
                options={"timeout": seconds},
            )
            return [float(x) for x in made["data"][0]["embedding"]]
        except Exception as exc:  # the SDK's errors: the grading fails, saying why
            raise GradingError(
                f"evaluator {name}: embedding target '{ref.name}' failed: "
                f"{type(exc).__name__}: {exc}"
            ) from None

    return embed

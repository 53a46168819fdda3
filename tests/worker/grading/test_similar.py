"""`embedding_similar` (promptfoo's `similar`) against a loopback server speaking OpenAI's
embeddings endpoint through the real SDK: cosine similarity at the threshold, a list of
values, the dot product and euclidean distance measures, the request bodies promptfoo
sends, and a target that cannot embed."""

from __future__ import annotations

import pytest

from evalrelay.bridge.contract.job import Job
from evalrelay.bridge.evalfile.evaluators import EmbeddingSimilarEvaluator
from evalrelay.worker.grading.errors import GradingError
from evalrelay.worker.grading.grade import grade
from evalrelay.worker.grading.similar import cosine, dot, euclidean, similar
from tests.bridge.evalfile.promptfoo.parity_model import parity_model
from tests.conftest import target_ref
from tests.worker.grading.test_grade import job


@pytest.fixture(autouse=True)
def key(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-embedding-test-key")


def embedding_job(url: str, **update: object) -> Job:
    settings = {"name": "emb", "provider": "openai", "model": "text-embedding-3-small",
                "base_url": f"{url}/v1"}  # fmt: skip
    return job(judges={"emb": target_ref(settings)}, **update)


def spec(value: str | list[str], **extra: object) -> EmbeddingSimilarEvaluator:
    return EmbeddingSimilarEvaluator.model_validate(
        {"type": "embedding_similar", "value": value, "target": "emb", **extra}
    )


def test_cosine_of_letter_counts_at_the_threshold() -> None:
    assert cosine([1.0, 0.0], [1.0, 0.0]) == 1.0 and cosine([1.0, 0.0], [0.0, 2.0]) == 0.0
    with parity_model() as model:
        same = similar(
            spec("Fox the quick brown"), "s", embedding_job(model.url), "the quick brown fox"
        )
        far = similar(spec("zebra jazz"), "s", embedding_job(model.url), "the quick brown fox")
        bodies = [s.body for s in model.seen]
    assert (same.score, same.passed) == (1.0, True)
    assert far.passed is False and far.score == pytest.approx(0.1715, abs=0.001)
    assert bodies[0] == {"input": "the quick brown fox", "model": "text-embedding-3-small"}
    assert len(bodies) == 4  # the answer and the value, per assertion


def test_a_list_passes_on_any_value_and_scores_the_closest_otherwise() -> None:
    with parity_model() as model:
        hit = similar(spec(["zebra jazz", "brown fox"]), "s", embedding_job(model.url), "fox brown")
        miss = similar(
            spec(["zebra", "jazz"], threshold=0.99), "s", embedding_job(model.url), "zea"
        )
    assert (hit.passed, hit.score) == (True, 1.0)
    assert miss.passed is False and 0 < miss.score < 0.99


def test_dot_product_and_euclidean_distance_are_judged_as_promptfoo_judges_them() -> None:
    """`similar:dot` passes at the threshold (within JavaScript's epsilon: 0.75 computed
    a hair below still passes); `similar:euclidean` passes at a distance of at most the
    threshold and scores 1 / (1 + distance)."""
    assert dot([1.0, 2.0], [3.0, 4.0]) == 11.0 and euclidean([0.0, 0.0], [3.0, 4.0]) == 5.0
    answer = "The quick brown fox"
    with parity_model() as model:
        at = similar(
            spec("quick fox", measure="dot_product"), "s", embedding_job(model.url), answer
        )
        far = similar(
            spec("zebra jazz", measure="euclidean"), "s", embedding_job(model.url), answer
        )
        near = similar(
            spec(["zebra jazz", "quick fox"], measure="euclidean", threshold=0.8),
            "s",
            embedding_job(model.url),
            answer,
        )
    assert at.passed is True and at.score == pytest.approx(0.75)
    assert far.passed is False
    assert far.details["distance"] == pytest.approx(1.2872, abs=0.0001)
    assert far.score == pytest.approx(1 / (1 + far.details["distance"]), abs=1e-6)
    assert near.passed is True and near.score == pytest.approx(1 / (1 + 2**-0.5), abs=1e-6)
    assert near.hits == ["distance 0.707 <= 0.8 to 'quick fox'"]


def test_not_similar_under_promptfoo_grading_turns_the_pass_around() -> None:
    with parity_model() as model:
        graded = grade(
            embedding_job(
                model.url,
                grading="promptfoo",
                pass_threshold=None,
                evaluators=[spec("zebra jazz", negate=True)],
            ),
            "the quick brown fox",
        )
    assert graded is not None and graded.passed is True
    assert graded.score == pytest.approx(1 - 0.1715, abs=0.001)


def test_a_target_without_an_embeddings_endpoint_is_a_grading_error() -> None:
    anthropic = {"name": "emb", "provider": "anthropic", "model": "claude-x"}
    with pytest.raises(GradingError, match="no OpenAI-style embeddings endpoint"):
        similar(spec("x"), "s", job(judges={"emb": target_ref(anthropic)}), "x")

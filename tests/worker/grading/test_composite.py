"""`composite`: members combined by weighted average, by the share that passes, by a
real aggregator command, and by a judge on a loopback server whose calls are counted."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from evalrelay.bridge.evalfile.evaluators import CompositeEvaluator
from evalrelay.worker.execute import execute
from evalrelay.worker.grading.grade import grade
from tests.conftest import target_ref
from tests.worker.grading.test_grade import job
from tests.worker.grading.test_judge import GOOD, judged_job, reply
from tests.worker.providers.vendor_server import serving

MEMBERS = [
    {"type": "contains", "value": "Paris", "name": "city"},
    {"type": "contains", "value": "France", "name": "country"},
    {"type": "regex", "pattern": r"\d{4}", "name": "year"},
]


def composite(aggregator: dict[str, Any]) -> CompositeEvaluator:
    return CompositeEvaluator.model_validate(
        {"type": "composite", "name": "gate", "evaluators": MEMBERS, "aggregator": aggregator}
    )


def test_weighted_average_uses_the_aggregator_weights() -> None:
    spec = composite({"type": "weighted_average", "weights": {"city": 3}})
    graded = grade(job(evaluators=[spec]), "Paris, since 1789")
    assert graded is not None and graded.score == pytest.approx(4 / 5)  # (3 + 0 + 1) / 5
    assert graded.misses == ["[country] answer does not contain 'France'"]


def test_threshold_scores_the_share_of_members_that_pass() -> None:
    graded = grade(job(evaluators=[composite({"type": "threshold", "threshold": 0.6})]), "Paris")
    assert graded is not None and graded.score == pytest.approx(1 / 3)
    reasoning = graded.evaluator_results[0].reasoning
    assert reasoning == "1 of 3 members passed (below the 0.6 required)"


def test_code_judge_aggregator_reads_every_member_result(tmp_path: Path) -> None:
    script = tmp_path / "agg.py"
    script.write_text(
        "import json, sys\n"
        "results = json.load(sys.stdin)['results']\n"
        "score = 1.0 if results['city']['score'] == 1 else 0.0\n"
        "print(json.dumps({'score': score, 'reasoning': 'city decides: ' + ','.join(results)}))\n"
    )
    spec = composite({"type": "code_judge", "path": f"python3 {script}", "cwd": str(tmp_path)})
    graded = grade(job(evaluators=[spec]), "Paris")
    assert graded is not None and graded.score == 1.0
    assert graded.reasoning == "city decides: city,country,year"


def test_a_failing_member_fails_the_composite() -> None:
    spec = CompositeEvaluator.model_validate(
        {
            "type": "composite",
            "evaluators": [{"type": "unsupported", "written_type": "min-words", "why": "custom"}],
        }
    )
    graded = grade(job(evaluators=[spec]), "Paris")
    assert graded is not None and graded.score is None
    assert graded.failures == [
        "evaluator composite: member unsupported failed: evaluator unsupported (min-words): custom"
    ]


def test_an_llm_judge_aggregator_and_judged_members_count_in_the_results_judge_spend(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """One judged member and an `llm_judge` aggregator, each one call of 11 input and 3
    output tokens at gpt-4o-mini's prices: the result's judges spent both."""
    monkeypatch.setenv("OPENAI_API_KEY", "sk-judge-test-key")
    spec = CompositeEvaluator.model_validate(
        {
            "type": "composite",
            "name": "gate",
            "evaluators": [MEMBERS[0], {"type": "llm_judge", "name": "judged"}],
            "aggregator": {"type": "llm_judge"},
        }
    )
    candidate = target_ref({"name": "t", "provider": "mock", "response": "Paris"})
    with serving(reply(GOOD)) as server:
        graded = execute(judged_job(server.url, evaluators=[spec], target=candidate), "w")
    assert len(server.seen) == 2, graded.error
    (gate,) = graded.evaluator_results
    usd = 2 * (11 * 0.15e-6 + 3 * 0.6e-6)
    assert gate.usage is not None and (gate.usage.input_tokens, gate.usage.output_tokens) == (22, 6)
    assert gate.cost is not None and gate.cost.usd == pytest.approx(usd, abs=1e-12)
    assert graded.judge_cost is not None and graded.judge_cost.usd == pytest.approx(usd, abs=1e-12)
    assert graded.judge_usage is not None and graded.judge_usage.input_tokens == 22

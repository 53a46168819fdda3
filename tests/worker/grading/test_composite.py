"""`composite`: members combined by weighted average, by the share that passes, and by a
real aggregator command."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from bridge.evalfile.evaluators import CompositeEvaluator
from tests.worker.grading.test_grade import job
from worker.grading.grade import grade

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

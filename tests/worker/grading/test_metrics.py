"""`latency`, `cost`, `token_usage`, `execution_metrics`: limits that hold, fail or were
never reported."""

from __future__ import annotations

from typing import Any

from pydantic import TypeAdapter

from evalrelay.bridge.evalfile.evaluators import EvaluatorSpec, RunMetricsSpec
from evalrelay.bridge.results.result import Usage
from evalrelay.worker.grading.metrics import run_metrics
from evalrelay.worker.grading.run_facts import RunFacts

RUN = RunFacts(
    usage=Usage(input_tokens=120, output_tokens=30),
    duration_ms=1500,
    tool_calls=[{"name": "a"}, {"name": "b"}],
)


def spec(**entry: Any) -> RunMetricsSpec:
    parsed: Any = TypeAdapter(EvaluatorSpec).validate_python(entry)
    return parsed  # type: ignore[no-any-return]


def test_latency() -> None:
    assert run_metrics(spec(type="latency", threshold=2000), "l", RUN).hits == [
        "Duration 1500ms <= 2000ms"
    ]
    assert run_metrics(spec(type="latency", threshold=1000), "l", RUN).score == 0.0


def test_token_usage_checks_each_limit_given() -> None:
    result = run_metrics(spec(type="token_usage", maxInput=100, max_total=200), "t", RUN)
    assert result.score == 0.0
    assert result.misses == ["Input tokens 120 > 100"]
    assert result.hits == ["Total tokens 150 <= 200"]


def test_a_figure_nobody_reported_is_a_miss() -> None:
    result = run_metrics(spec(type="cost", budget=0.5), "c", RUN)
    assert result.score == 0.0
    assert result.misses == ["Cost: not reported by the provider (limit 0.5 USD)"]


def test_execution_metrics_counts_tool_calls() -> None:
    assert run_metrics(spec(type="execution_metrics", max_tool_calls=2), "e", RUN).score == 1.0
    assert run_metrics(spec(type="execution_metrics", max_tool_calls=1), "e", RUN).misses == [
        "Tool calls 2 > 1"
    ]

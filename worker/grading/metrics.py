"""`latency`, `cost`, `token_usage` and `execution_metrics`: limits on how the run went.

Each limit is a hit or a miss and the score is 1 or 0, as in AgentV. A figure the
provider did not report is a miss that says so: a limit nobody measured has not held.
"""

from __future__ import annotations

from evalrelay.bridge.evalfile.evaluators import (
    CostEvaluator,
    ExecutionMetricsEvaluator,
    LatencyEvaluator,
    RunMetricsSpec,
    TokenUsageEvaluator,
)
from evalrelay.bridge.results.result import EvaluatorResult
from evalrelay.worker.grading.run_facts import RunFacts


def run_metrics(spec: RunMetricsSpec, name: str, run: RunFacts) -> EvaluatorResult:
    usage = run.usage
    tokens_in = usage.input_tokens if usage else None
    tokens_out = usage.output_tokens if usage else None
    total = None if tokens_in is None or tokens_out is None else tokens_in + tokens_out
    limits: list[tuple[str, float | int | None, float | None, str]] = []
    if isinstance(spec, LatencyEvaluator):
        limits = [("Duration", run.duration_ms, spec.threshold, "ms")]
    elif isinstance(spec, CostEvaluator):
        limits = [("Cost", run.cost_usd, spec.budget, " USD")]
    elif isinstance(spec, TokenUsageEvaluator):
        limits = [
            ("Input tokens", tokens_in, spec.max_input, ""),
            ("Output tokens", tokens_out, spec.max_output, ""),
            ("Total tokens", total, spec.max_total, ""),
        ]
    elif isinstance(spec, ExecutionMetricsEvaluator):
        limits = [
            ("Tool calls", len(run.tool_calls), spec.max_tool_calls, ""),
            ("LLM calls", run.llm_calls, spec.max_llm_calls, ""),
            ("Tokens", total, spec.max_tokens, ""),
            ("Cost", run.cost_usd, spec.max_cost_usd, " USD"),
            ("Duration", run.duration_ms, spec.max_duration_ms, "ms"),
        ]
    hits, misses = [], []
    for what, value, limit, unit in limits:
        if limit is None:
            continue
        if value is None:
            misses.append(f"{what}: not reported by the provider (limit {limit:g}{unit})")
        elif value <= limit:
            hits.append(f"{what} {value:g}{unit} <= {limit:g}{unit}")
        else:
            misses.append(f"{what} {value:g}{unit} > {limit:g}{unit}")
    return EvaluatorResult(
        name=name,
        type=spec.type,
        score=0.0 if misses else 1.0,
        weight=spec.weight,
        hits=hits,
        misses=misses,
    )

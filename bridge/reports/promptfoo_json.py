"""A campaign's results in promptfoo's results-file shape, for a promptfoo config's
`outputPath`: tools that read `promptfoo eval -o results.json` read evalrelay's run too.

The fields are those of promptfoo's `-o` JSON (`results.results[]` with `testCase`,
`prompt`, `provider`, `response`, `success`, `score`, `gradingResult.componentResults`,
and `results.stats`); evalrelay's own results file stays the record.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from evalrelay.bridge.evalfile.promptfoo.detect import is_promptfoo
from evalrelay.bridge.evalfile.yaml_source import load_yaml
from evalrelay.bridge.results.result import EvaluatorResult, Result, Status
from evalrelay.bridge.results.results_file import read_results

PASSING = 0.5
"""An assertion's score at which it shows as passed: checks score 1 or 0, a judge's score
passes from the middle up."""


def output_paths(config: Path) -> list[Path]:
    """The `.json` files a promptfoo config's `outputPath` names (one or a list); none
    for a file that is no YAML (an AgentV TypeScript suite)."""
    if config.suffix.lower() not in (".yaml", ".yml", ".json"):
        return []
    data = load_yaml(config).data
    if not is_promptfoo(config, data):
        return []
    raw = data.get("outputPath")
    names = raw if isinstance(raw, list) else [raw]
    return [config.parent / n for n in names if isinstance(n, str) and n.endswith(".json")]


def promptfoo_results(campaign_id: str, results: Iterable[Result]) -> dict[str, Any]:
    rows = [_row(i, r) for i, r in enumerate(results)]
    passed = sum(1 for r in rows if r["success"])
    errors = sum(1 for r in rows if r["error"])
    return {
        "evalId": campaign_id,
        "results": {
            "version": 3,
            "timestamp": datetime.now(UTC).isoformat(),
            "results": rows,
            "stats": {
                "successes": passed,
                "failures": len(rows) - passed - errors,
                "errors": errors,
            },
        },
    }


def write_promptfoo_outputs(config: Path, campaign_id: str, results_file: Path) -> list[Path]:
    """Write each `outputPath` of the config; the paths written."""
    paths = output_paths(config)
    if not paths or not results_file.is_file():
        return []
    document = promptfoo_results(campaign_id, read_results(results_file))
    for path in paths:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(document, indent=2, ensure_ascii=False), encoding="utf-8")
    return paths


def _row(index: int, result: Result) -> dict[str, Any]:
    failed_to_run = result.status not in (Status.OK, Status.MODEL_FAILURE)
    question = result.raw_request.question
    return {
        "id": result.job_id,
        "testIdx": index,
        "testCase": {"description": result.case_id, "metadata": result.metadata},
        "prompt": {"raw": question, "label": result.case_id.rpartition("__prompt_")[2]},
        "provider": {"id": result.target, "label": result.target},
        "response": {"output": result.answer} if result.answer is not None else None,
        "success": bool(result.passed),
        "score": result.score or 0.0,
        "latencyMs": result.duration_ms,
        "error": result.error.message if result.error and failed_to_run else None,
        "namedScores": {e.name: e.score for e in result.evaluator_results if e.score is not None},
        "gradingResult": {
            "pass": bool(result.passed),
            "score": result.score or 0.0,
            "reason": result.reasoning or "",
            "componentResults": [_component(e) for e in result.evaluator_results],
        }
        if result.evaluator_results
        else None,
    }


def _component(evaluator: EvaluatorResult) -> dict[str, Any]:
    score = evaluator.score or 0.0
    return {
        "pass": evaluator.passed
        if evaluator.passed is not None
        else (evaluator.score is not None and score >= PASSING),
        "score": score,
        "reason": evaluator.error or evaluator.reasoning or "; ".join(evaluator.misses),
        "assertion": {"type": evaluator.type, "metric": evaluator.name},
    }

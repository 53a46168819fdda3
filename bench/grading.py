"""What grading and reports cost, each next to a same-run baseline.

- Grading: `execute` of mock jobs with no evaluator (the baseline) and with five
  deterministic evaluators (contains, not_contains, regex, json_valid, similarity).
- Reports: a campaign of N results read from its JSONL (the baseline), then rendered as
  HTML, JUnit XML and Markdown.

    python bench/grading.py [--jobs 2000] [--results 10000]
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from evalrelay.bridge.contract.job import Job  # noqa: E402
from evalrelay.bridge.evalfile.evaluators import (  # noqa: E402
    ContainsEvaluator,
    JsonValidEvaluator,
    NotContainsEvaluator,
    RegexEvaluator,
    SimilarityEvaluator,
)
from evalrelay.bridge.prompt.request import PromptRequest  # noqa: E402
from evalrelay.bridge.reports.campaign import CampaignResults  # noqa: E402
from evalrelay.bridge.reports.writer import RENDERERS  # noqa: E402
from evalrelay.bridge.results.result import Status  # noqa: E402
from evalrelay.worker.execute import execute  # noqa: E402
from tests.bridge.reports.reporting import graded, result, write_campaign  # noqa: E402
from tests.conftest import direct_job  # noqa: E402

EVALUATORS = [
    ContainsEvaluator(type="contains", value="Paris"),
    NotContainsEvaluator(type="not_contains", value="London"),
    RegexEvaluator(type="regex", pattern=r"\bParis\b"),
    JsonValidEvaluator(type="json_valid"),
    SimilarityEvaluator(type="similarity"),
]


def mock_job(evaluators: bool) -> Job:
    settings = {"name": "m", "provider": "mock", "response": "The capital is Paris. " * 20}
    return direct_job(
        settings,
        request=PromptRequest(question="What is the capital of France?"),
        reference_answer="Paris is the capital of France.",
        evaluators=EVALUATORS if evaluators else [],
    )


def per_job_ms(job: Job, count: int) -> float:
    started = time.perf_counter()
    for _ in range(count):
        execute(job, "bench")
    return (time.perf_counter() - started) * 1000 / count


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--jobs", type=int, default=2000)
    parser.add_argument("--results", type=int, default=10_000)
    args = parser.parse_args()

    bare = per_job_ms(mock_job(False), args.jobs)
    checked = per_job_ms(mock_job(True), args.jobs)
    print(f"execute, no evaluator:      {bare:.3f} ms/job")
    print(
        f"execute, five checks:       {checked:.3f} ms/job  (grading adds {checked - bare:.3f} ms,"
        f" ratio {checked / bare:.2f})"
    )

    with tempfile.TemporaryDirectory() as folder:
        results = []
        for i in range(args.results):
            if i % 10 == 0:
                results.append(result(f"case-{i}", f"t{i % 3}", Status.INFRA_ERROR, error="boom"))
            else:
                results.append(graded(f"case-{i}", f"t{i % 3}", (i % 100) / 100))
        path = write_campaign(Path(folder), results)
        started = time.perf_counter()
        campaign = CampaignResults.load(path)
        load_s = time.perf_counter() - started
        print(f"read {args.results} results:       {load_s:.2f} s (baseline)")
        for kind, render in RENDERERS.items():
            started = time.perf_counter()
            text = render(campaign)
            took = time.perf_counter() - started
            print(
                f"{kind:>8}: {took:.2f} s, {len(text.encode()) / 1e6:.1f} MB "
                f"(ratio to reading {took / load_s:.2f})"
            )


if __name__ == "__main__":
    main()

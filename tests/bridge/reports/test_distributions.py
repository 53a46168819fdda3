"""Scores in tenths and times in widening bins, each split by outcome; quantiles by rank."""

from __future__ import annotations

from datetime import timedelta

from evalrelay.bridge.reports.charts import latency_chart
from evalrelay.bridge.reports.distributions import Distributions
from evalrelay.bridge.reports.lines import HeadArtifacts, ResultHead
from evalrelay.bridge.reports.outcomes import Outcome, outcome
from evalrelay.bridge.results.result import Status
from tests.bridge.reports.reporting import graded, result


def head(score: float | None, ms: int, status: Status = Status.OK) -> ResultHead:
    made = graded("c", "t", score) if score is not None else result("c", "t", status, error="x")
    made = made.model_copy(
        update={"duration_ms": ms, "finished_at": made.started_at + timedelta(milliseconds=ms)}
    )
    return ResultHead.model_validate_json(made.model_dump_json())


def test_scores_fall_in_tenths_with_one_alone_in_the_top_bin_and_errors_in_none() -> None:
    spread = Distributions()
    for score in (0.0, 0.09, 0.1, 0.55, 0.8, 0.99, 1.0, 1.0):
        one = head(score, 100)
        spread.add(one, outcome(one))
    timed_out = head(None, 60_000, Status.TIMEOUT)
    spread.add(timed_out, outcome(timed_out))
    bins = spread.score_bins()
    assert [b.outcomes.total() for b in bins] == [2, 1, 0, 0, 0, 1, 0, 0, 1, 1, 2]
    assert [b.label for b in bins[-3:]] == ["0.8", "0.9", "1.0"]
    assert bins[-1].outcomes == {Outcome.PASSED: 2}
    assert bins[-2].outcomes == {Outcome.PASSED: 1}
    assert bins[0].outcomes == {Outcome.FAILED: 2}


def test_times_fall_in_widening_bins_and_quantiles_are_by_rank() -> None:
    spread = Distributions()
    for ms in [*([100] * 50), *([2_000] * 40), *([45_000] * 9), 400_000]:
        one = head(0.9, ms)
        spread.add(one, outcome(one))
    bins = {b.label: b.outcomes.total() for b in spread.latency_bins()}
    assert bins == {
        "<0.25s": 50, "0.25s": 0, "0.5s": 0, "1s": 40, "2.5s": 0, "5s": 0, "10s": 0,
        "30s": 9, "1m": 0, "≥5m": 1,
    }  # fmt: skip
    assert spread.quantiles_ms() == {0.5: 2_000, 0.9: 45_000, 0.99: 400_000}
    assert Distributions().quantiles_ms() == {}


def test_the_calls_own_times_are_apart_from_the_results_which_hold_the_waits() -> None:
    """A 0.5 s model behind `max_concurrency`: results of 5 s (mostly waiting for a slot),
    calls of 0.5 s; a cached answer's call time is the filling call's and is left out."""
    spread = Distributions()
    for cached in (False, False, True):
        one = head(0.9, 5_000)
        one = one.model_copy(update={"artifacts": HeadArtifacts(latency_ms=500, cached=cached)})
        spread.add(one, outcome(one))
    assert spread.quantiles_ms() == {0.5: 5_000, 0.9: 5_000, 0.99: 5_000}
    assert spread.call_quantiles_ms() == {0.5: 500, 0.9: 500, 0.99: 500}
    note = latency_chart(spread).note
    assert "results: p50 5.0 s" in note and "API calls alone: p50 500 ms" in note

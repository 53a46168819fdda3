"""How a campaign's scores and times spread, counted in the one pass that loads it: what
the report's charts draw, without reading the results again.

Each bin counts its results by outcome, so a chart shows where the failures and errors
sit (a tail of timeouts, a heap of zero scores), not only how many there are.
"""

from __future__ import annotations

from array import array
from bisect import bisect_right
from collections import Counter
from typing import NamedTuple

from evalrelay.bridge.reports.lines import ResultHead
from evalrelay.bridge.reports.outcomes import Outcome

SCORE_BINS = 10
"""Scores below 1 fall in tenths, from [0, 0.1) to [0.9, 1); a score of 1 has the top bin
to itself, labelled 1.0: full marks are what most checks give, and a column labelled 0.9
must not hold them."""

LATENCY_EDGES_MS = (250, 500, 1_000, 2_500, 5_000, 10_000, 30_000, 60_000, 300_000)
"""Bins from a quarter second to five minutes, wider as they go: an API call takes
about a second, an agent's task minutes."""

QUANTILES = (0.5, 0.9, 0.99)


class Bin(NamedTuple):
    label: str
    outcomes: Counter[Outcome]


class Distributions:
    def __init__(self) -> None:
        self.scores = [Counter[Outcome]() for _ in range(SCORE_BINS + 1)]
        self.latencies = [Counter[Outcome]() for _ in range(len(LATENCY_EDGES_MS) + 1)]
        self.durations = array("q")
        """Every result's time, for its quantiles: 8 bytes a result."""
        self.calls = array("q")
        """The API calls' own times (not a cached answer's), for theirs."""

    def add(self, head: ResultHead, kind: Outcome) -> None:
        if head.score is not None and head.status.is_scored:
            self.scores[_score_bin(head.score)][kind] += 1
        self.latencies[bisect_right(LATENCY_EDGES_MS, head.duration_ms)][kind] += 1
        self.durations.append(head.duration_ms)
        if head.artifacts.latency_ms is not None and head.artifacts.cached is not True:
            self.calls.append(head.artifacts.latency_ms)

    def score_bins(self) -> list[Bin]:
        return [
            Bin(f"{tenth / SCORE_BINS:.1f}", counts) for tenth, counts in enumerate(self.scores)
        ]

    def latency_bins(self) -> list[Bin]:
        labels = ["<" + _seconds(LATENCY_EDGES_MS[0])]
        labels += [_seconds(edge) for edge in LATENCY_EDGES_MS[:-1]]
        labels.append("≥" + _seconds(LATENCY_EDGES_MS[-1]))
        return [Bin(label, counts) for label, counts in zip(labels, self.latencies, strict=True)]

    def quantiles_ms(self) -> dict[float, int]:
        """p50, p90 and p99 of the results' times (nearest rank); none without results."""
        return _quantiles(self.durations)

    def call_quantiles_ms(self) -> dict[float, int]:
        """The same of the API calls alone: a result's time also holds its wait for a
        concurrency slot (`max_concurrency`, a rate limit) and its retries."""
        return _quantiles(self.calls)


def _quantiles(times: array[int]) -> dict[float, int]:
    if not times:
        return {}
    ordered = sorted(times)
    last = len(ordered) - 1
    return {q: ordered[min(last, int(q * len(ordered)))] for q in QUANTILES}


def _score_bin(score: float) -> int:
    """The bin of a score: its tenth, or the top bin for a score of 1."""
    if score >= 1:
        return SCORE_BINS
    return min(SCORE_BINS - 1, max(0, int(score * SCORE_BINS)))


def _seconds(ms: int) -> str:
    if ms >= 60_000:
        return f"{ms // 60_000}m"
    return f"{ms / 1000:g}s"

"""`tool_trajectory`, each mode against call lists worked out by hand."""

from __future__ import annotations

from typing import Any

import pytest
from pydantic import ValidationError

from evalrelay.bridge.evalfile.evaluators import ToolTrajectoryEvaluator
from evalrelay.worker.grading.run_facts import RunFacts
from evalrelay.worker.grading.trajectory import trajectory

CALLS = RunFacts(
    tool_calls=[
        {"name": "search", "arguments": {"q": "paris", "limit": 5}},
        {"name": "read", "arguments": {"path": "a.md"}},
        {"name": "search", "arguments": {"q": "lyon"}},
    ]
)


def spec(**entry: Any) -> ToolTrajectoryEvaluator:
    return ToolTrajectoryEvaluator.model_validate({"type": "tool_trajectory", **entry})


def test_any_order_counts_calls_per_tool() -> None:
    result = trajectory(spec(mode="any_order", minimums={"search": 2, "write": 1}), "t", CALLS)
    assert result.score == 0.5
    assert result.hits == ["search: called 2 times (required >=2)"]
    assert result.misses == ["write: called 0 times (required >=1)"]


def test_in_order_allows_calls_between_and_matches_given_args_only() -> None:
    expected = [{"tool": "search", "args": {"q": "paris"}}, {"tool": "search"}]
    result = trajectory(spec(mode="in_order", expected=expected), "t", CALLS)
    assert result.score == 1.0 and result.hits == [
        "Found search at position 0",
        "Found search at position 2",
    ]
    wrong = [{"tool": "read"}, {"tool": "search", "args": {"q": "rome"}}, {"tool": "read"}]
    result = trajectory(spec(mode="in_order", expected=wrong), "t", CALLS)
    assert result.score == pytest.approx(1 / 3)
    assert result.misses == [
        "Expected search at position 1: tool found at 2 but args mismatch",
        "Expected read at position 2, not found in remaining trace",
    ]


def test_exact_compares_position_by_position() -> None:
    expected = [{"tool": "search"}, {"tool": "search"}]
    result = trajectory(spec(mode="exact", expected=expected), "t", CALLS)
    assert result.score == 0.5
    assert result.misses == [
        "Expected 2 tool calls, got 3",
        "Position 1: expected search, got read",
    ]


def test_exact_args_match_needs_every_key() -> None:
    loose = [{"tool": "search", "args": {"q": "paris"}}]
    assert trajectory(spec(mode="in_order", expected=loose), "t", CALLS).score == 1.0
    strict = spec(mode="in_order", expected=loose, args_match="exact")
    assert trajectory(strict, "t", CALLS).score == 0.0


def test_superset_and_subset_compare_the_tools_called() -> None:
    expected = [{"tool": "search"}, {"tool": "write"}]
    assert trajectory(spec(mode="superset", expected=expected), "t", CALLS).score == 0.5
    subset = trajectory(spec(mode="subset", expected=expected), "t", CALLS)
    assert subset.score == 0.5 and subset.misses == ["read called but not expected"]


def test_no_calls_at_all_is_a_miss_that_says_so() -> None:
    result = trajectory(spec(mode="in_order", expected=[{"tool": "search"}]), "t", RunFacts())
    assert result.score == 0.0
    assert result.misses[0] == "No tool calls in the run to evaluate"


def test_a_mode_without_what_it_needs_is_refused() -> None:
    with pytest.raises(ValidationError, match="any_order needs `minimums`"):
        spec(mode="any_order")
    with pytest.raises(ValidationError, match="in_order needs `expected`"):
        spec(mode="in_order")


def test_subset_with_no_calls_passes_without_a_miss() -> None:
    result = trajectory(spec(mode="subset", expected=[{"tool": "search"}]), "t", RunFacts())
    assert (result.score, result.misses) == (1.0, [])


def test_an_expected_output_must_be_held_by_the_calls_reported_output() -> None:
    run = RunFacts(
        tool_calls=[
            {
                "name": "search",
                "arguments": {"q": "x1"},
                "output": {"hits": [{"url": "a"}], "n": 1},
            },
            {"name": "fetch", "arguments": {"url": "a"}, "output": "<html>"},
        ]
    )
    held = [{"tool": "search", "output": {"hits": [{"url": "a"}]}}, {"tool": "fetch"}]
    assert trajectory(spec(mode="in_order", expected=held), "t", run).score == 1.0
    other = [{"tool": "search"}, {"tool": "fetch", "output": "<xml>"}]
    result = trajectory(spec(mode="exact", expected=other), "t", run)
    assert result.misses == ["Position 1: fetch output mismatch"]
    unreported = RunFacts(tool_calls=[{"name": "search", "arguments": {"q": "x1"}}])
    wanted = [{"tool": "search", "output": {"n": 1}}]
    result = trajectory(spec(mode="in_order", expected=wanted), "t", unreported)
    assert result.misses == ["Expected search at position 0: tool found at 0 but output mismatch"]

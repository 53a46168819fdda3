"""The charts' shapes: bars in proportion to what they count, each with a title that
says it in words."""

from __future__ import annotations

from collections import Counter

from evalrelay.bridge.reports.charts import (
    BAR_WIDTH,
    before_after_chart,
    outcome_chart,
    score_chart,
    status_chart,
)
from evalrelay.bridge.reports.distributions import Distributions
from evalrelay.bridge.reports.lines import ResultHead
from evalrelay.bridge.reports.outcomes import Outcome, outcome
from tests.bridge.reports.reporting import graded


def test_a_targets_bar_is_split_by_outcome_in_proportion() -> None:
    chart = outcome_chart({"gpt": Counter({Outcome.PASSED: 3, Outcome.ERROR: 1})})
    passed, error = chart.rects
    assert (passed.width, error.width) == (BAR_WIDTH * 0.75, BAR_WIDTH * 0.25)
    assert error.x == passed.x + passed.width
    assert (passed.css, error.css) == ("o-passed", "o-error")
    assert passed.title == "gpt: 3 passed of 4 (75%)"
    assert [label.text for label in chart.labels] == ["gpt", "3 of 4 passed"]


def test_statuses_are_listed_longest_first_against_the_longest() -> None:
    chart = status_chart({"timeout": 5, "ok": 20})
    assert [r.css for r in chart.rects] == ["s-ok", "s-timeout"]
    assert [r.width for r in chart.rects] == [BAR_WIDTH, BAR_WIDTH / 4]
    assert chart.rects[1].title == "5 timeout of 25 (20%)"


def test_before_and_after_say_a_missing_side_rather_than_draw_it() -> None:
    chart = before_after_chart([("gpt", 0.5, 0.25), ("new", None, 1.0)])
    assert [(r.css, r.width, r.title) for r in chart.rects] == [
        ("before", BAR_WIDTH / 2, "gpt: before 50%"),
        ("after", BAR_WIDTH / 4, "gpt: after 25%"),
        ("after", BAR_WIDTH, "new: after 100%"),
    ]
    assert "before -" in [label.text for label in chart.labels]
    long_name = before_after_chart([("a-very-long-target-name-indeed", 1.0, 1.0)]).labels[0]
    assert long_name.text.endswith("…") and long_name.title == "a-very-long-target-name-indeed"


def test_a_full_score_is_drawn_in_the_top_bin_labelled_one_and_not_in_the_nines() -> None:
    spread = Distributions()
    for score in (1.0, 1.0, 0.95):
        one = ResultHead.model_validate_json(graded("c", "t", score).model_dump_json())
        spread.add(one, outcome(one))
    chart = score_chart(spread)
    axis = [label for label in chart.labels if label.css == "axis"]
    assert [label.text for label in axis][-2:] == ["0.9", "1.0"]
    top, nines = max(axis, key=lambda label: label.x), axis[-2]
    columns = {rect.title: rect for rect in chart.rects if rect.css.startswith("o-")}
    assert set(columns) == {"score from 1.0: 2 passed", "score from 0.9: 1 passed"}
    full, ninety_five = columns["score from 1.0: 2 passed"], columns["score from 0.9: 1 passed"]
    assert full.x + full.width / 2 == top.x
    assert ninety_five.x + ninety_five.width / 2 == nines.x
    assert full.height == 2 * ninety_five.height

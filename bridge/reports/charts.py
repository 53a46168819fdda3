"""The report's charts as shapes: rectangles and labels in a chart's own coordinates,
which `charts.html.j2` writes as inline SVG. No script and no library draws them, so
they show in a mailed report, a page printed to PDF and a browser without scripts.

Each shape carries a title (a tooltip), and every figure is also written out in a label
or the tables below: a chart is for seeing at a glance, never the only place a number is.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import NamedTuple

from evalrelay.bridge.reports.distributions import Bin, Distributions
from evalrelay.bridge.reports.outcomes import Outcome
from evalrelay.bridge.reports.statistics_text import mean_score_text, pass_rate_text
from evalrelay.bridge.results.statistics import TargetStatistics
from evalrelay.bridge.results.summary import TargetSummary

WIDTH = 400
ROW = 22
BAR = 14
LABEL_WIDTH = 110
LABEL_CHARS = 17
BAR_WIDTH = 160
"""Bar charts: a name, a bar, and its figures to the right of the bar."""

PLOT_TOP, PLOT_BOTTOM, PLOT_LEFT = 16, 124, 8
HISTOGRAM_HEIGHT = 146


class Rect(NamedTuple):
    x: float
    y: float
    width: float
    height: float
    css: str
    title: str


class Label(NamedTuple):
    x: float
    y: float
    text: str
    anchor: str = "start"
    css: str = ""
    title: str = ""


@dataclass
class Chart:
    name: str
    """Its element's id is `chart-<name>`."""
    title: str
    height: float
    width: float = WIDTH
    rects: list[Rect] = field(default_factory=list)
    labels: list[Label] = field(default_factory=list)
    note: str = ""


def outcome_chart(targets: Mapping[str, Counter[Outcome]]) -> Chart:
    """A bar per target, split by outcome, with its pass rate and mean score."""
    chart = Chart("targets", "Outcomes per target", height=max(1, len(targets)) * ROW + 4)
    for row, (name, outcomes) in enumerate(sorted(targets.items())):
        y = row * ROW + 4
        chart.labels.append(_name(name, y))
        total = outcomes.total()
        x = float(LABEL_WIDTH)
        for kind in Outcome:
            count = outcomes[kind]
            if not count:
                continue
            width = BAR_WIDTH * count / total
            title = f"{name}: {count} {kind.value} of {total} ({count / total:.0%})"
            chart.rects.append(Rect(x, y, width, BAR, f"o-{kind.value}", title))
            x += width
        passed = outcomes[Outcome.PASSED]
        chart.labels.append(
            Label(LABEL_WIDTH + BAR_WIDTH + 8, y + BAR - 2, f"{passed:,} of {total:,} passed")
        )
    chart.note = "Every result of each target, by outcome."
    return chart


def status_chart(counts: Mapping[str, int]) -> Chart:
    """A bar per status, longest first."""
    rows = sorted(counts.items(), key=lambda item: (-item[1], item[0]))
    chart = Chart("statuses", "Statuses", height=max(1, len(rows)) * ROW + 4)
    most = max(counts.values(), default=1)
    total = sum(counts.values())
    for row, (status, count) in enumerate(rows):
        y = row * ROW + 4
        chart.labels.append(_name(status, y))
        width = max(1.0, BAR_WIDTH * count / most)
        title = f"{count} {status} of {total} ({count / total:.0%})"
        chart.rects.append(Rect(LABEL_WIDTH, y, width, BAR, f"s-{status}", title))
        chart.labels.append(Label(LABEL_WIDTH + width + 6, y + BAR - 2, f"{count:,}"))
    return chart


def score_chart(distributions: Distributions) -> Chart:
    bins = distributions.score_bins()
    scored = sum(b.outcomes.total() for b in bins)
    chart = histogram("scores", "Scores", bins, "score from")
    chart.note = f"{scored:,} graded results, by score in tenths (1.0 alone) and by outcome."
    return chart


def latency_chart(distributions: Distributions) -> Chart:
    """A result's time runs from its start to its end, its waits for a concurrency slot
    and its retries included; the calls' own times are said apart, when there are any."""
    title = "Time per result (waits for a slot included)"
    chart = histogram("latency", title, distributions.latency_bins(), "from")
    notes = []
    for label, quantiles in (
        ("results", distributions.quantiles_ms()),
        ("API calls alone", distributions.call_quantiles_ms()),
    ):
        if quantiles:
            shown = "  ·  ".join(
                f"p{round(q * 100)} {_duration(ms)}" for q, ms in quantiles.items()
            )
            notes.append(f"{label}: {shown}")
    chart.note = "   |   ".join(notes)
    return chart


def histogram(name: str, title: str, bins: Sequence[Bin], bin_words: str) -> Chart:
    """Columns split by outcome, the count above each, the bin's start below."""
    chart = Chart(name, title, height=HISTOGRAM_HEIGHT)
    most = max((b.outcomes.total() for b in bins), default=0) or 1
    step = (WIDTH - 2 * PLOT_LEFT) / len(bins)
    scale = (PLOT_BOTTOM - PLOT_TOP) / most
    for column, (label, outcomes) in enumerate(bins):
        x = PLOT_LEFT + column * step + 2
        y = float(PLOT_BOTTOM)
        for kind in Outcome:
            count = outcomes[kind]
            if not count:
                continue
            height = count * scale
            y -= height
            title = f"{bin_words} {label}: {count:,} {kind.value}"
            chart.rects.append(Rect(x, y, step - 4, height, f"o-{kind.value}", title))
        total = outcomes.total()
        middle = x + (step - 4) / 2
        if total:
            chart.labels.append(Label(middle, y - 3, f"{total:,}", "middle", "count"))
        chart.labels.append(Label(middle, PLOT_BOTTOM + 14, label, "middle", "axis"))
    chart.rects.append(Rect(PLOT_LEFT, PLOT_BOTTOM, WIDTH - 2 * PLOT_LEFT, 1, "axis", ""))
    return chart


def header_charts(
    outcomes: Mapping[str, Counter[Outcome]],
    summaries: Mapping[str, TargetSummary],
    counts: Mapping[str, int],
    distributions: Distributions,
    statistics: Mapping[str, TargetStatistics] | None = None,
) -> list[Chart]:
    """The charts at the top of a campaign's report."""
    return [
        rate_and_score_chart(summaries, statistics),
        outcome_chart(outcomes),
        status_chart(counts),
        score_chart(distributions),
        latency_chart(distributions),
    ]


class Measure(NamedTuple):
    """One bar of a group: what it measures (its CSS class too), as a fraction of a full bar,
    and its 95% interval, drawn as an error bar across it."""

    css: str
    word: str
    fraction: float | None
    shown: str
    interval: tuple[float, float] | None = None
    interval_shown: str = ""


def grouped_chart(
    name: str,
    title: str,
    groups: Sequence[tuple[str, Sequence[Measure]]],
    chart_width: int = WIDTH,
) -> Chart:
    """A group of thin bars per name (a target's pass rate and mean score; its pass rate
    before and after), each with its figure to the right."""
    per_group = max((len(measures) for _, measures in groups), default=1)
    height = per_group * (BAR + 2) + 8
    chart = Chart(name, title, height=max(1, len(groups)) * height, width=chart_width)
    for row, (label, measures) in enumerate(groups):
        y = row * height + 4
        chart.labels.append(_name(label, y + (len(measures) - 1) * (BAR + 2) / 2))
        for offset, measure in enumerate(measures):
            top = y + offset * (BAR + 2)
            if measure.fraction is not None:
                width = max(1.0, BAR_WIDTH * measure.fraction)
                title_text = f"{label}: {measure.word} {measure.shown}"
                chart.rects.append(Rect(LABEL_WIDTH, top, width, BAR, measure.css, title_text))
            if measure.interval is not None:
                chart.rects.extend(error_bar(top, measure.interval, f"{label}: {measure.word}"))
            text = f"{measure.word} {measure.shown} {measure.interval_shown}".rstrip()
            chart.labels.append(
                Label(LABEL_WIDTH + BAR_WIDTH + 8, top + BAR - 3, text, css=measure.css)
            )
    return chart


def error_bar(top: float, interval: tuple[float, float], what: str) -> list[Rect]:
    """A whisker across a bar from the low end of its interval to the high, with caps."""
    low, high = (LABEL_WIDTH + BAR_WIDTH * end for end in interval)
    title = f"{what}: 95% interval {interval[0]:.2f} to {interval[1]:.2f}"
    middle = top + BAR / 2
    return [
        Rect(low, middle - 1.5, max(1.0, high - low), 3, "ci", title),
        Rect(low - 1.5, top + 1, 3, BAR - 2, "ci", title),
        Rect(high - 1.5, top + 1, 3, BAR - 2, "ci", title),
    ]


def rate_and_score_chart(
    summaries: Mapping[str, TargetSummary],
    statistics: Mapping[str, TargetStatistics] | None = None,
) -> Chart:
    """Each target's pass rate and mean score, with their 95% intervals as error bars."""
    groups = []
    for name, summary in sorted(summaries.items()):
        stats = (statistics or {}).get(name)
        rate, mean = summary.pass_rate, summary.mean_score
        groups.append(
            (
                name,
                [
                    Measure(
                        "rate",
                        "pass rate",
                        rate,
                        _percent(rate),
                        stats.pass_rate_ci if stats else None,
                        _interval(pass_rate_text(stats)) if stats else "",
                    ),
                    Measure(
                        "mean",
                        "mean score",
                        mean,
                        _fixed(mean),
                        stats.mean_score_ci if stats else None,
                        _interval(mean_score_text(stats)) if stats else "",
                    ),
                ],
            )
        )
    wide = WIDTH + 90 if statistics else WIDTH
    chart = grouped_chart("rates", "Pass rate and mean score per target", groups, wide)
    chart.note = "Of the graded results: errors and cancelled jobs are not counted."
    if statistics:
        chart.note += " Whiskers and [brackets]: 95% intervals, clustered by case."
    return chart


def before_after_chart(rows: Iterable[tuple[str, float | None, float | None]]) -> Chart:
    """Each target's pass rate before and after: what `compare --html` shows first."""
    groups = [
        (
            name,
            [
                Measure("before", "before", before, _percent(before)),
                Measure("after", "after", after, _percent(after)),
            ],
        )
        for name, before, after in rows
    ]
    return grouped_chart("pass-rates", "Pass rate per target, before and after", groups)


def _name(name: str, y: float) -> Label:
    shown = name if len(name) <= LABEL_CHARS else name[: LABEL_CHARS - 1] + "…"
    return Label(0, y + BAR - 2, shown, title=name)


def _interval(text: str) -> str:
    """The bracketed interval that follows a figure: `[16% to 61%]` of `36% [16% to 61%]`."""
    return text.partition(" ")[2]


def _percent(rate: float | None) -> str:
    return "-" if rate is None else f"{rate:.0%}"


def _fixed(score: float | None) -> str:
    return "-" if score is None else f"{score:.2f}"


def _duration(ms: int) -> str:
    if ms < 1000:
        return f"{ms} ms"
    if ms < 60_000:
        return f"{ms / 1000:.1f} s"
    return f"{ms / 60_000:.1f} min"

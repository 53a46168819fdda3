"""The statistics as people read them: a number with its 95% interval (`36% [16\u201361%]`),
and the table of pairs, for the terminal and for Markdown (a GitHub step summary)."""

from __future__ import annotations

from collections.abc import Sequence

from evalrelay.bridge.results.statistics import PairStatistics, TargetStatistics

DASH = "\u2013"
"""Between the ends of an interval: an en dash, as in print."""

PAIR_COLUMNS = (
    "a",
    "b",
    "cases",
    "difference (b - a) [95% CI]",
    "p",
    "p (Holm)",
    "verdict (of b)",
    "cases for 80% power",
)


def pass_rate_text(stats: TargetStatistics | None) -> str:
    if stats is None:
        return "-"
    low, high = stats.pass_rate_ci
    return f"{stats.pass_rate:.0%} [{low:.0%}{DASH}{high:.0%}]"


def mean_score_text(stats: TargetStatistics | None) -> str:
    if stats is None:
        return "-"
    if stats.mean_score_ci is None:
        return f"{stats.mean_score:.3f}"
    low, high = stats.mean_score_ci
    return f"{stats.mean_score:.3f} [{low:.2f}{DASH}{high:.2f}]"


def pair_cells(pair: PairStatistics) -> tuple[str, ...]:
    difference = "-" if pair.difference is None else f"{pair.difference:+.3f}"
    if pair.difference_ci is not None:
        low, high = pair.difference_ci
        difference += f" [{low:+.3f} to {high:+.3f}]"
    return (
        pair.a,
        pair.b,
        str(pair.n_paired),
        difference,
        _p(pair.p_value),
        _p(pair.p_value_holm),
        pair.verdict,
        "-" if pair.cases_for_80_power is None else str(pair.cases_for_80_power),
    )


def pair_lines(pairs: Sequence[PairStatistics]) -> list[str]:
    """A line per pair, for the terminal: eight columns do not fit in eighty."""
    lines = []
    for pair in pairs:
        _, _, cases, difference, p, p_holm, verdict, power = pair_cells(pair)
        needed = "" if power == "-" else f"; about {power} cases would show it 80% of the time"
        lines.append(
            f"{pair.b} vs {pair.a}: {verdict}, mean score {difference} over {cases} cases, "
            f"p {p} (Holm {p_holm}){needed}"
        )
    return lines


def pairs_markdown(title: str, pairs: Sequence[PairStatistics]) -> str:
    """The pairs as a Markdown table (a `|` in a name is escaped)."""
    lines = [
        f"### {title}",
        "",
        "| " + " | ".join(PAIR_COLUMNS) + " |",
        "|" + "|".join("---" if c in ("a", "b") else "---:" for c in PAIR_COLUMNS) + "|",
    ]
    for pair in pairs:
        cells = (cell.replace("|", "\\|") for cell in pair_cells(pair))
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"


def _p(value: float | None) -> str:
    if value is None:
        return "-"
    return "<0.001" if value < 0.001 else f"{value:.3f}"

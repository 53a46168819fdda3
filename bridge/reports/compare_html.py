"""`compare --html`: two campaigns (or two targets) side by side in one self-contained
page, regressions first.

The page holds every case the comparison lists as compact JSON and its script shows a
page of them at a time, as the campaign report does: comparing 100,000 cases with
`--all` stays a page a browser opens. Filters (change, target, text) and the page number
live in the address.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC, datetime
from pathlib import Path

from markupsafe import Markup

from evalrelay.bridge.reports.charts import before_after_chart
from evalrelay.bridge.reports.compare import CaseChange, CaseState, Change
from evalrelay.bridge.reports.html_cases import PAGE_ROWS
from evalrelay.bridge.reports.html_texts import script_json
from evalrelay.bridge.reports.templates import page_template
from evalrelay.bridge.reports.verdict import ChangeCounts, TargetChange
from evalrelay.bridge.results.summary import write_chunks_atomically

CHANGE_ORDER = (
    Change.REGRESSED,
    Change.IMPROVED,
    Change.CHANGED,
    Change.NEW,
    Change.GONE,
    Change.SAME,
)
"""How the page lists cases: what needs looking at first."""


def change_first(change: CaseChange) -> tuple[int, bool, str, str, str, int]:
    """Regressions first, and of them the cases that no longer pass."""
    return (
        CHANGE_ORDER.index(change.change),
        not change.no_longer_passes,
        change.dataset,
        change.case_id,
        change.target,
        change.repeat,
    )


def write_compare_html(
    path: Path,
    title: str,
    changes: Sequence[CaseChange],
    counts: ChangeCounts,
    targets: Sequence[TargetChange],
    conclusion: str,
) -> Path:
    """The page at `path`: `changes` are the cases listed (all, or all but the unchanged)."""
    listed = sorted(changes, key=change_first)
    chart = before_after_chart(
        (
            row.target,
            row.before.pass_rate if row.before else None,
            row.after.pass_rate if row.after else None,
        )
        for row in targets
    )
    page = page_template("compare.html.j2").generate(
        title=title,
        generated=datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC"),
        conclusion=conclusion,
        regressed=counts.kinds[Change.REGRESSED],
        kinds=[(kind.value, counts.kinds[kind]) for kind in CHANGE_ORDER],
        chart=chart,
        targets=targets,
        data=Markup(script_json({"page": PAGE_ROWS, "cases": [_row(c) for c in listed]})),
        hidden_same=counts.kinds[Change.SAME] - sum(c.change is Change.SAME for c in listed),
    )
    path.parent.mkdir(parents=True, exist_ok=True)
    write_chunks_atomically(path, page)
    return path


def _row(change: CaseChange) -> list[object]:
    """`[dataset, case, repeat, target, change, before, after]` (see `C` in the page)."""
    return [
        change.dataset,
        change.case_id,
        change.repeat,
        change.target,
        change.change.value,
        _state(change.before),
        _state(change.after),
    ]


def _state(state: CaseState | None) -> list[object] | None:
    if state is None:
        return None
    return [state.outcome.value, state.status.value, state.score]

"""What a comparison adds up to: per target, how many cases regressed and improved, and
the one line that ends `compare`'s output.

Counted a case at a time (`ChangeCounts`), so that comparing 100,000 cases keeps only the
ones a user is shown.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable

from pydantic import BaseModel

from evalrelay.bridge.reports.campaign import CampaignResults
from evalrelay.bridge.reports.compare import CaseChange, Change
from evalrelay.bridge.results.summary import TargetSummary


class ChangeCounts:
    def __init__(self) -> None:
        self.by_target: Counter[tuple[str, Change]] = Counter()
        self.kinds: Counter[Change] = Counter()
        self.no_longer_pass = 0
        """Regressed cases that passed before and do not now (the others scored lower)."""

    @classmethod
    def of(cls, changes: Iterable[CaseChange]) -> ChangeCounts:
        counts = cls()
        for change in changes:
            counts.add(change)
        return counts

    def add(self, change: CaseChange) -> None:
        self.by_target[change.target, change.change] += 1
        self.kinds[change.change] += 1
        self.no_longer_pass += change.no_longer_passes

    @property
    def cases(self) -> int:
        return self.kinds.total()


class TargetChange(BaseModel):
    """One row of the per-target table: the target's stats before and after."""

    target: str
    before: TargetSummary | None
    after: TargetSummary | None
    regressed: int
    improved: int


def target_changes(
    before: CampaignResults,
    after: CampaignResults,
    counts: ChangeCounts,
    targets: tuple[str, str] | None = None,
) -> list[TargetChange]:
    """A row per target (one row `BASELINE → CANDIDATE` when two targets are compared)."""
    if targets is None:
        pairs = [
            (name, name)
            for name in sorted(before.summary.targets.keys() | after.summary.targets.keys())
        ]
    else:
        pairs = [targets]
    rows = []
    for old, new in pairs:
        label = old if old == new else f"{old} → {new}"
        rows.append(
            TargetChange(
                target=label,
                before=before.summary.targets.get(old),
                after=after.summary.targets.get(new),
                regressed=counts.by_target[label, Change.REGRESSED],
                improved=counts.by_target[label, Change.IMPROVED],
            )
        )
    return rows


def verdict(counts: ChangeCounts, tolerance: float) -> str:
    """One line for the end of the output: the regressions and why, or that there are none."""
    kinds = counts.kinds
    others = ", ".join(
        f"{kinds[kind]} {kind.value}"
        for kind in (Change.IMPROVED, Change.CHANGED, Change.NEW, Change.GONE)
        if kinds[kind]
    )
    regressed, failing = kinds[Change.REGRESSED], counts.no_longer_pass
    if not regressed:
        return f"no regression in {_results(counts.cases)}" + (f" ({others})" if others else "")
    reasons = [
        f"{failing} passed before and not now" if failing else "",
        f"{regressed - failing} scored more than {tolerance:g} lower"
        if regressed > failing
        else "",
    ]
    why = "; ".join(r for r in reasons if r)
    return f"{regressed} of {_results(counts.cases)} regressed ({why})" + (
        f"; also {others}" if others else ""
    )


def _results(count: int) -> str:
    """A result is one answer (a case of a target, a repeat): what both runs are counted in."""
    return f"{count} result" if count == 1 else f"{count} results"

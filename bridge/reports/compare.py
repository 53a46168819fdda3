"""Two campaigns side by side, or two targets of one: per case, what got better, worse, or
went away, and whether anything regressed (CI fails on that).

A case regressed when it passed in the baseline and does not in the candidate (failed,
error, cancelled or ungraded), or when its score fell by more than the tolerance. It
improved in the mirror cases. Cases are matched by dataset, case id, repeat and target;
comparing two targets, by dataset, case id and repeat.
"""

from __future__ import annotations

from collections.abc import Sequence
from enum import StrEnum

from pydantic import BaseModel

from bridge.errors import EvalrelayError
from bridge.reports.campaign import CampaignResults, Outcome, outcome
from bridge.results.result import Result
from bridge.results.summary import CampaignSummary, TargetSummary

SCORE_CHANGE = 0.05
"""The default tolerance: a score moving by this much or less counts as unchanged."""

SCORE_DIGITS = 6
"""Scores are compared rounded, so 0.85 - 0.80 is not more than 0.05."""


class Change(StrEnum):
    REGRESSED = "regressed"
    IMPROVED = "improved"
    CHANGED = "changed"
    """A different status or outcome, neither better nor worse (an error of another kind)."""
    SAME = "same"
    NEW = "new"
    GONE = "gone"


class CaseChange(BaseModel):
    dataset: str
    case_id: str
    target: str
    """The target's name, or `BASELINE → CANDIDATE` when two targets are compared."""
    repeat: int
    before: Result | None
    after: Result | None
    change: Change

    @property
    def no_longer_passes(self) -> bool:
        return _passed(self.before) and not _passed(self.after) and self.after is not None


class TargetChange(BaseModel):
    """One row of the per-target table: the target's stats before and after."""

    target: str
    before: TargetSummary | None
    after: TargetSummary | None
    regressed: int
    improved: int


def split_target(text: str) -> tuple[str, str | None]:
    """`CAMPAIGN:TARGET` (or `FILE.jsonl:TARGET`) as its parts. A campaign id has no colon
    and a target name may have some, so the first colon splits; a campaign alone has no
    target, nor has a Windows path, whose colon follows the drive letter."""
    path, jsonl, target = text.partition(".jsonl:")
    if jsonl:
        return (path + ".jsonl", target) if target else (text, None)
    campaign, colon, target = text.partition(":")
    if not colon or not target or len(campaign) < 2:
        return text, None
    return campaign, target


def one_target(results: CampaignResults, target: str) -> CampaignResults:
    """Only the results of one of the campaign's targets."""
    chosen = [r for r in results.results if r.target == target]
    if not chosen:
        known = ", ".join(sorted(results.summary.targets)) or "none"
        raise EvalrelayError(
            f"campaign {results.campaign_id} has no results of target '{target}'; "
            f"its targets: {known}"
        )
    summary = CampaignSummary(campaign_id=results.campaign_id)
    for result in chosen:
        summary.add(result)
    return results.model_copy(update={"results": chosen, "summary": summary})


def compare(
    before: CampaignResults,
    after: CampaignResults,
    tolerance: float = SCORE_CHANGE,
    *,
    targets: tuple[str, str] | None = None,
) -> list[CaseChange]:
    """Every case of either side, with how it changed. With `targets`, the first target's
    results in `before` are set against the second's in `after`."""
    label = None
    if targets is not None:
        before, after = one_target(before, targets[0]), one_target(after, targets[1])
        label = targets[0] if targets[0] == targets[1] else f"{targets[0]} → {targets[1]}"
    old = {_key(r, label): r for r in before.results}
    new = {_key(r, label): r for r in after.results}
    changes = []
    for key in sorted(old.keys() | new.keys()):
        a, b = old.get(key), new.get(key)
        dataset, case_id, target, repeat = key
        changes.append(
            CaseChange(
                dataset=dataset,
                case_id=case_id,
                target=target,
                repeat=repeat,
                before=a,
                after=b,
                change=_change(a, b, tolerance),
            )
        )
    return changes


def target_changes(
    before: CampaignResults,
    after: CampaignResults,
    changes: Sequence[CaseChange],
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
        mine = [c for c in changes if c.target == label]
        rows.append(
            TargetChange(
                target=label,
                before=before.summary.targets.get(old),
                after=after.summary.targets.get(new),
                regressed=sum(c.change is Change.REGRESSED for c in mine),
                improved=sum(c.change is Change.IMPROVED for c in mine),
            )
        )
    return rows


def verdict(changes: Sequence[CaseChange], tolerance: float) -> str:
    """One line for the end of the output: the regressions and why, or that there are none."""
    counts = {kind: sum(c.change is kind for c in changes) for kind in Change}
    others = ", ".join(
        f"{counts[kind]} {kind.value}"
        for kind in (Change.IMPROVED, Change.CHANGED, Change.NEW, Change.GONE)
        if counts[kind]
    )
    regressed = [c for c in changes if c.change is Change.REGRESSED]
    if not regressed:
        return f"no regression in {len(changes)} cases" + (f" ({others})" if others else "")
    failing = sum(c.no_longer_passes for c in regressed)
    reasons = [
        f"{failing} passed before and not now" if failing else "",
        f"{len(regressed) - failing} scored more than {tolerance:g} lower"
        if len(regressed) > failing
        else "",
    ]
    why = "; ".join(r for r in reasons if r)
    return f"{len(regressed)} of {len(changes)} cases regressed ({why})" + (
        f"; also {others}" if others else ""
    )


def _change(before: Result | None, after: Result | None, tolerance: float) -> Change:
    if before is None:
        return Change.NEW
    if after is None:
        return Change.GONE
    if _passed(before) != _passed(after):
        return Change.REGRESSED if _passed(before) else Change.IMPROVED
    if before.score is not None and after.score is not None:
        delta = round(after.score - before.score, SCORE_DIGITS)
        if abs(delta) > tolerance:
            return Change.IMPROVED if delta > 0 else Change.REGRESSED
    if outcome(before) != outcome(after) or before.status != after.status:
        return Change.CHANGED
    return Change.SAME


def _passed(result: Result | None) -> bool:
    return result is not None and outcome(result) is Outcome.PASSED


def _key(result: Result, target: str | None) -> tuple[str, str, str, int]:
    return (result.dataset, result.case_id, target or result.target, result.repeat)

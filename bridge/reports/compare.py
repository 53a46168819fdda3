"""Two campaigns side by side: per case and target, what got better, worse, or went away."""

from __future__ import annotations

from enum import StrEnum

from pydantic import BaseModel

from bridge.reports.campaign import CampaignResults, Outcome, outcome
from bridge.results.result import Result

SCORE_CHANGE = 0.05
"""A score moving less than this, with the same outcome, counts as unchanged."""

_RANK = {Outcome.PASSED: 3, Outcome.UNGRADED: 2, Outcome.FAILED: 1, Outcome.ERROR: 0}


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
    repeat: int
    before: Result | None
    after: Result | None
    change: Change


def compare(before: CampaignResults, after: CampaignResults) -> list[CaseChange]:
    old = {_key(r): r for r in before.results}
    new = {_key(r): r for r in after.results}
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
                change=_change(a, b),
            )
        )
    return changes


def _change(before: Result | None, after: Result | None) -> Change:
    if before is None:
        return Change.NEW
    if after is None:
        return Change.GONE
    was, now = outcome(before), outcome(after)
    rank_was, rank_now = _RANK.get(was, 0), _RANK.get(now, 0)
    if rank_now != rank_was:
        return Change.IMPROVED if rank_now > rank_was else Change.REGRESSED
    if before.score is not None and after.score is not None:
        delta = after.score - before.score
        if abs(delta) >= SCORE_CHANGE:
            return Change.IMPROVED if delta > 0 else Change.REGRESSED
    if was != now or before.status != after.status:
        return Change.CHANGED
    return Change.SAME


def _key(result: Result) -> tuple[str, str, str, int]:
    return (result.dataset, result.case_id, result.target, result.repeat)

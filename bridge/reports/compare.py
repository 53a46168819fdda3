"""Two campaigns side by side, or two targets of one: per case, what got better, worse, or
went away, and whether anything regressed (CI fails on that).

A case regressed when it passed in the baseline and does not in the candidate (failed,
error, cancelled or ungraded), or when its score fell by more than the tolerance. It
improved in the mirror cases. Cases are matched by dataset, case id, repeat and target;
comparing two targets, by dataset, case id and repeat.
"""

from __future__ import annotations

from collections.abc import Iterator
from enum import StrEnum
from itertools import chain
from typing import NamedTuple

from evalrelay.bridge.errors import EvalrelayError
from evalrelay.bridge.reports.campaign import CampaignResults
from evalrelay.bridge.reports.lines import ResultHead
from evalrelay.bridge.reports.outcomes import Outcome, outcome
from evalrelay.bridge.results.result import Status

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


class CaseState(NamedTuple):
    """What a comparison needs of one result: a campaign's worth of them stays small."""

    status: Status
    score: float | None
    outcome: Outcome

    @classmethod
    def of(cls, result: ResultHead) -> CaseState:
        return cls(result.status, result.score, outcome(result))


Key = tuple[str, str, str, int]
"""Target (or `BASELINE → CANDIDATE`), dataset, case id, repeat: the order results are
read in, so two campaigns are matched by walking both once."""


class CaseChange(NamedTuple):
    dataset: str
    case_id: str
    target: str
    """The target's name, or `BASELINE → CANDIDATE` when two targets are compared."""
    repeat: int
    before: CaseState | None
    after: CaseState | None
    change: Change

    @property
    def no_longer_passes(self) -> bool:
        return _passed(self.before) and not _passed(self.after) and self.after is not None


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


def compare(
    before: CampaignResults,
    after: CampaignResults,
    tolerance: float = SCORE_CHANGE,
    *,
    targets: tuple[str, str] | None = None,
) -> list[CaseChange]:
    """Every case of either side, with how it changed, by dataset, case id, target and
    repeat. With `targets`, the first target's results in `before` are set against the
    second's in `after`."""
    return sorted(case_changes(before, after, tolerance, targets=targets), key=case_order)


def case_changes(
    before: CampaignResults,
    after: CampaignResults,
    tolerance: float = SCORE_CHANGE,
    *,
    targets: tuple[str, str] | None = None,
) -> Iterator[CaseChange]:
    """`compare`, a case at a time, by target, dataset, case id and repeat: the cases
    that did not change need not be kept."""
    label = None
    if targets is not None:
        _has_target(before, targets[0])
        _has_target(after, targets[1])
        label = targets[0] if targets[0] == targets[1] else f"{targets[0]} → {targets[1]}"
    old = _states(before, targets[0] if targets else None, label)
    new = _states(after, targets[1] if targets else None, label)
    for key, a, b in _matched(old, new):
        yield CaseChange(key[1], key[2], key[0], key[3], a, b, _change(a, b, tolerance))


def case_order(change: CaseChange) -> tuple[str, str, str, int]:
    """How changes are listed: a case's targets together."""
    return change.dataset, change.case_id, change.target, change.repeat


def _has_target(results: CampaignResults, target: str) -> None:
    if target not in results.summary.targets:
        known = ", ".join(sorted(results.summary.targets)) or "none"
        raise EvalrelayError(
            f"campaign {results.campaign_id} has no results of target '{target}'; "
            f"its targets: {known}"
        )


def _states(
    campaign: CampaignResults, target: str | None, label: str | None
) -> Iterator[tuple[Key, CaseState]]:
    """Each case's state in key order; of a case listed twice, the later line."""
    last: tuple[Key, CaseState] | None = None
    for result in campaign.heads(target):
        key = (label or result.target, result.dataset, result.case_id, result.repeat)
        if last is not None and last[0] != key:
            yield last
        last = key, CaseState.of(result)
    if last is not None:
        yield last


def _matched(
    old: Iterator[tuple[Key, CaseState]], new: Iterator[tuple[Key, CaseState]]
) -> Iterator[tuple[Key, CaseState | None, CaseState | None]]:
    """Both sides walked once, side by side, as a merge of two sorted lists."""
    a, b = next(old, None), next(new, None)
    while a is not None and b is not None:
        if a[0] < b[0]:
            yield a[0], a[1], None
            a = next(old, None)
        elif b[0] < a[0]:
            yield b[0], None, b[1]
            b = next(new, None)
        else:
            yield a[0], a[1], b[1]
            a, b = next(old, None), next(new, None)
    for key, state in chain([a] if a else [], old):
        yield key, state, None
    for key, state in chain([b] if b else [], new):
        yield key, None, state


def _change(before: CaseState | None, after: CaseState | None, tolerance: float) -> Change:
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
    if before.outcome != after.outcome or before.status != after.status:
        return Change.CHANGED
    return Change.SAME


def _passed(state: CaseState | None) -> bool:
    return state is not None and state.outcome is Outcome.PASSED

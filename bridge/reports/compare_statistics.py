"""The statistics of a comparison: each side's intervals, and whether each pair of sides
differs by more than noise, with Holm's correction across the pairs (`compare --json`).

Two campaigns: each target both ran, set against itself, on the cases both graded; two
targets (of one campaign or two): the candidate against the baseline.
"""

from __future__ import annotations

from evalrelay.bridge.reports.campaign import CampaignResults
from evalrelay.bridge.results.statistics import (
    CampaignStatistics,
    PairStatistics,
    TargetStatistics,
    corrected,
    pair_statistics,
    quiet,
    target_statistics,
)


def comparison_statistics(
    before: CampaignResults, after: CampaignResults, targets: tuple[str, str] | None = None
) -> CampaignStatistics:
    """Sides are named by target within one campaign, `CAMPAIGN:TARGET` across two; each
    pair's `b` is the candidate (AFTER, or the second target), so a positive difference
    means the candidate scores higher."""
    if targets is None:
        sides = [(t, t) for t in sorted(before.summary.targets.keys() & after.summary.targets)]
    else:
        sides = [targets]

    with quiet():
        return _comparison_statistics(before, after, sides)


def _comparison_statistics(
    before: CampaignResults, after: CampaignResults, sides: list[tuple[str, str]]
) -> CampaignStatistics:
    def label(campaign: CampaignResults, target: str) -> str:
        return side_name(before, after, campaign, target)

    stats: dict[str, TargetStatistics] = {}
    pairs: list[PairStatistics] = []
    for old, new in sides:
        old_cases, new_cases = before.summary.graded_answers(old), after.summary.graded_answers(new)
        for name, cases in ((label(before, old), old_cases), (label(after, new), new_cases)):
            side = target_statistics(cases)
            if side is not None:
                stats[name] = side
        pairs.append(pair_statistics(label(before, old), label(after, new), old_cases, new_cases))
    return CampaignStatistics(targets=stats, pairs=corrected(pairs))


def side_name(
    before: CampaignResults, after: CampaignResults, campaign: CampaignResults, target: str
) -> str:
    """A side's name in the statistics: its target within one campaign, else `CAMPAIGN:TARGET`."""
    return target if before.campaign_id == after.campaign_id else f"{campaign.campaign_id}:{target}"


def gate_failures(stats: CampaignStatistics, min_effect: float) -> list[PairStatistics]:
    """The pairs whose candidate is worse after Holm's correction, by at least `min_effect`
    of mean score: what fails `compare --gate`."""
    return [
        pair
        for pair in stats.pairs
        if pair.verdict == "worse"
        and pair.difference is not None
        and -pair.difference >= min_effect
    ]

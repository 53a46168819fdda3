"""What counts as a regression, and `CAMPAIGN:TARGET`, without the command around them."""

from __future__ import annotations

from pathlib import Path

from evalrelay.bridge.reports.campaign import CampaignResults
from evalrelay.bridge.reports.compare import CaseState, Change, compare, split_target
from evalrelay.bridge.reports.outcomes import Outcome
from evalrelay.bridge.reports.verdict import ChangeCounts, verdict
from evalrelay.bridge.results.result import Status
from tests.bridge.reports.reporting import graded, result, write_campaign


def test_a_regression_is_a_pass_lost_or_a_score_drop_beyond_the_tolerance(
    tmp_path: Path,
) -> None:
    before = CampaignResults.load(
        write_campaign(
            tmp_path,
            [
                graded("lost", "t", 0.9),
                graded("errored", "t", 0.9),
                graded("lower", "t", 0.7),
                graded("slightly", "t", 0.7),
                graded("broke", "t", 0.3),
            ],
            "before",
        )
    )
    after = CampaignResults.load(
        write_campaign(
            tmp_path,
            [
                graded("lost", "t", 0.7),
                result("errored", "t", Status.INFRA_ERROR, error="down"),
                graded("lower", "t", 0.5),
                graded("slightly", "t", 0.65),
                result("broke", "t", Status.TIMEOUT, error="slow"),
            ],
            "after",
        )
    )
    changes = compare(before, after)
    assert {c.case_id: c.change for c in changes} == {
        "lost": Change.REGRESSED,
        "errored": Change.REGRESSED,
        "lower": Change.REGRESSED,
        "slightly": Change.SAME,
        "broke": Change.CHANGED,  # it did not pass before, and has no score now
    }
    assert verdict(ChangeCounts.of(changes), 0.05) == (
        "3 of 5 results regressed (2 passed before and not now; 1 scored more than 0.05 "
        "lower); also 1 changed"
    )
    loose = {c.case_id: c.change for c in compare(before, after, tolerance=0.25)}
    assert loose["lower"] is Change.SAME and loose["lost"] is Change.REGRESSED


def test_campaign_colon_target_splits_but_paths_do_not() -> None:
    assert split_target("camp:gpt-4o") == ("camp", "gpt-4o")
    assert split_target("camp:openai:gpt-4o") == ("camp", "openai:gpt-4o")
    assert split_target("results/camp.jsonl:claude") == ("results/camp.jsonl", "claude")
    assert split_target("camp") == ("camp", None)
    assert split_target(r"C:\results\camp.jsonl") == (r"C:\results\camp.jsonl", None)
    assert split_target("camp:") == ("camp:", None)


def test_a_case_listed_twice_is_compared_by_its_later_line(tmp_path: Path) -> None:
    before = CampaignResults.load(write_campaign(tmp_path, [graded("a", "t", 0.9)], "before"))
    after = CampaignResults.load(
        write_campaign(
            tmp_path,
            [graded("a", "t", 0.9, job_id="first"), graded("a", "t", 0.2, job_id="again")],
            "after",
        )
    )
    (change,) = compare(before, after)
    assert (change.case_id, change.change, change.after) == (
        "a",
        Change.REGRESSED,
        CaseState(Status.OK, 0.2, Outcome.FAILED),
    )

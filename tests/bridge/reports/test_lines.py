"""A campaign's results read back from its file in report order, one at a time."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from evalrelay.bridge.errors import EvalrelayError
from evalrelay.bridge.reports.campaign import CampaignResults
from evalrelay.bridge.results.result import Status
from tests.bridge.reports.reporting import graded, result, write_campaign


def test_results_come_back_by_target_dataset_case_and_repeat(tmp_path: Path) -> None:
    path = write_campaign(
        tmp_path,
        [
            graded("b", "gpt", 0.9, job_id="b-gpt-1", repeat=1),
            result("a", "gpt", Status.TIMEOUT, error="slow", job_id="a-first"),
            graded("b", "claude", 0.9),
            graded("b", "gpt", 0.9, job_id="b-gpt-0"),
            result("a", "gpt", Status.OK, job_id="a-again"),  # the same case, listed again
            graded("a", "gpt", 0.5, dataset="art"),
        ],
    )
    path.write_text(path.read_text().replace("\n", "\n\n", 1))  # a blank line is no result
    campaign = CampaignResults.load(path)
    assert len(campaign) == 6
    assert [(r.target, r.dataset, r.job_id) for r in campaign.results()] == [
        ("claude", "geo", "b-claude"),
        ("gpt", "art", "a-gpt"),
        ("gpt", "geo", "a-first"),  # equal keys in the order of the file
        ("gpt", "geo", "a-again"),
        ("gpt", "geo", "b-gpt-0"),
        ("gpt", "geo", "b-gpt-1"),
    ]
    assert [r.job_id for r in campaign.results("claude")] == ["b-claude"]
    assert list(campaign.results("mistral")) == []
    assert campaign.summary.results == 6 and campaign.tallies["gpt"].outcomes.total() == 5


def test_the_order_is_that_of_the_ids_and_repeats_as_python_sorts_them(tmp_path: Path) -> None:
    """Ids that begin others, upper case, accents and repeats past 255 sort as the
    (case id, repeat) of each line would, whatever the keys are made of."""
    cases = [("ab", 0), ("a", 300), ("a-b", 1), ("é", 0), ("Z", 2), ("a", 2), ("a", 256)]
    lines = [
        graded(case_id, "gpt", 0.9, job_id=f"{case_id}/{repeat}", repeat=repeat)
        for case_id, repeat in cases
    ]
    campaign = CampaignResults.load(write_campaign(tmp_path, lines))
    assert [r.job_id for r in campaign.results()] == [f"{c}/{r}" for c, r in sorted(cases)]


def test_a_results_file_replaced_since_it_was_loaded_is_not_read_at_its_old_offsets(
    tmp_path: Path,
) -> None:
    path = write_campaign(tmp_path, [graded("a", "gpt", 0.9), graded("b", "gpt", 0.9)])
    campaign = CampaignResults.load(path)
    replacement = write_campaign(tmp_path, [graded("b", "gpt", 0.9)], "new")
    os.replace(replacement, path)  # as `retry` takes lines out of it
    with pytest.raises(EvalrelayError, match="was replaced while it was being read"):
        list(campaign.results())


def test_a_campaign_without_a_results_file_has_no_results(tmp_path: Path) -> None:
    campaign = CampaignResults.load(tmp_path / "none.jsonl")
    assert (len(campaign), list(campaign.results()), campaign.summary.results) == (0, [], 0)

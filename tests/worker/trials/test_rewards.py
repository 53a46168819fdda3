"""Reading a verifier's reward as Harbor does: reward.txt first, else reward.json, else 0."""

from __future__ import annotations

from pathlib import Path

import pytest

from evalrelay.bridge.evalfile.harbor.config import StepConfig
from evalrelay.worker.trials.rewards import (
    RewardError,
    read_rewards,
    reward_of,
    stops_after,
    trial_rewards,
)


def test_reward_txt_wins_over_reward_json(tmp_path: Path) -> None:
    (tmp_path / "reward.txt").write_text(" 0.5\n")
    (tmp_path / "reward.json").write_text('{"reward": 1}')
    assert read_rewards(tmp_path) == {"reward": 0.5}


def test_every_number_of_reward_json_is_kept(tmp_path: Path) -> None:
    (tmp_path / "reward.json").write_text('{"reward": 1, "parsed": 0.25, "fields": 0}')
    rewards = read_rewards(tmp_path)
    assert rewards == {"reward": 1.0, "parsed": 0.25, "fields": 0.0}
    assert reward_of(rewards) == 1.0


def test_no_reward_file_is_no_reward(tmp_path: Path) -> None:
    assert read_rewards(tmp_path) is None


@pytest.mark.parametrize(
    ("name", "text", "says"),
    [
        ("reward.txt", "pass\n", "reward.txt holds 'pass'"),
        ("reward.txt", "nan", "reward.txt holds 'nan'"),
        ("reward.json", "[1]", "not an object"),
        ("reward.json", '{"reward": "1"}', "'reward' is '1'"),
        ("reward.json", '{"reward": true}', "'reward' is True"),
    ],
)
def test_a_reward_file_that_holds_no_number_is_an_error(
    tmp_path: Path, name: str, text: str, says: str
) -> None:
    (tmp_path / name).write_text(text)
    with pytest.raises(RewardError, match=says):
        read_rewards(tmp_path)


def test_a_multi_step_trial_rewards_each_name_by_its_mean_over_the_steps_that_ran() -> None:
    """Harbor's default: a name a step lacks counts 0 there; a step without rewards (its
    tests overran, or wrote none) is left out of the mean."""
    graded = [{"reward": 1.0, "style": 0.5}, None, {"reward": 0.0}]
    assert trial_rewards(graded, "mean") == {"reward": 0.5, "style": 0.25}
    assert trial_rewards(graded, "final") == {"reward": 0.0}
    assert trial_rewards([None], "mean") is None


@pytest.mark.parametrize(
    ("min_reward", "rewards", "stops"),
    [
        (1.0, {"reward": 1.0}, False),
        (1.0, {"reward": 0.5}, True),
        (0.5, {"other": 1.0}, True),  # a number gates `reward`; a missing one is below
        ({"shape": 1.0}, {"reward": 0.0, "shape": 1.0}, False),
        ({"shape": 1.0}, {"reward": 1.0}, True),
        (None, {"reward": 0.0}, False),
        (None, None, True),  # no rewards at all: the step failed, the trial stops
    ],
)
def test_min_reward_gates_the_steps_after(
    min_reward: float | dict[str, float] | None,
    rewards: dict[str, float] | None,
    stops: bool,
) -> None:
    step = StepConfig(name="s", min_reward=min_reward)
    assert stops_after(step, rewards) is stops

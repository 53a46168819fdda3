"""Reading a verifier's reward as Harbor does: reward.txt first, else reward.json, else 0."""

from __future__ import annotations

from pathlib import Path

import pytest

from worker.trials.rewards import RewardError, read_rewards, reward_of


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

"""Reading the reward a task's tests wrote: `reward.txt` (one number), else `reward.json`
(a flat object of numbers). Neither is no reward: the trial counts 0 in a campaign's
mean, as in Harbor."""

from __future__ import annotations

import json
import math
from pathlib import Path


class RewardError(Exception):
    """Raised when a reward file is there but holds no number (the task's tests are wrong)."""


def read_rewards(verifier_logs: Path) -> dict[str, float] | None:
    """The rewards by name: `{"reward": x}` from reward.txt, every number of reward.json;
    None when the tests wrote neither."""
    text_file, json_file = verifier_logs / "reward.txt", verifier_logs / "reward.json"
    if text_file.is_file():
        text = text_file.read_text(encoding="utf-8", errors="replace").strip()
        try:
            return {"reward": _number(float(text))}
        except ValueError:
            raise RewardError(f"reward.txt holds {text[:80]!r}, not a number") from None
    if json_file.is_file():
        try:
            data = json.loads(json_file.read_text(encoding="utf-8", errors="replace"))
        except json.JSONDecodeError as exc:
            raise RewardError(f"reward.json is not JSON: {exc}") from None
        if not isinstance(data, dict):
            raise RewardError("reward.json is not an object of numbers")
        rewards = {}
        for name, value in data.items():
            if isinstance(value, bool) or not isinstance(value, int | float):
                raise RewardError(f"reward.json's {name!r} is {value!r}, not a number")
            rewards[str(name)] = _number(float(value))
        return rewards
    return None


def reward_of(rewards: dict[str, float]) -> float:
    """The trial's one number: `reward`, else the only value, else 0."""
    if "reward" in rewards:
        return rewards["reward"]
    if len(rewards) == 1:
        return next(iter(rewards.values()))
    return 0.0


def _number(value: float) -> float:
    if not math.isfinite(value):
        raise ValueError(value)
    return value

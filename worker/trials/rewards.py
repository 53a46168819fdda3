"""The rewards of a trial, as Harbor reads and combines them.

A step's are what its tests wrote: `reward.txt` (one number), else `reward.json` (a flat
object of numbers); neither is no reward (the trial counts 0 in a campaign's mean). A
multi-step trial's are made of its steps' (`trial_rewards`), and a step's rewards decide
whether the steps after it run (`stops_after`)."""

from __future__ import annotations

import json
import math
from pathlib import Path

from evalrelay.bridge.evalfile.harbor.config import StepConfig


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


def stops_after(step: StepConfig | None, rewards: dict[str, float] | None) -> bool:
    """Whether the steps after `step` are skipped: it has no rewards (its setup, its
    tests or their reward failed, which Harbor records as the step's exception), or a
    reward its `min_reward` gates (`reward` for a number, each key of a table) is below."""
    if rewards is None:
        return True
    if step is None or step.min_reward is None:
        return False
    wanted = step.min_reward
    gates = wanted if isinstance(wanted, dict) else {"reward": wanted}
    return any(rewards.get(name, -math.inf) < floor for name, floor in gates.items())


def trial_rewards(graded: list[dict[str, float] | None], strategy: str) -> dict[str, float] | None:
    """The trial's rewards of its steps' (those that ran): `final`, the last one's;
    `mean`, each name's mean over the steps that have rewards, a name a step lacks
    counting 0 there. None when no step has rewards."""
    if strategy == "final":
        return graded[-1] if graded else None
    present = [r for r in graded if r is not None]
    if not present:
        return None
    names = dict.fromkeys(name for r in present for name in r)
    return {name: sum(r.get(name, 0.0) for r in present) / len(present) for name in names}

"""The service images install docker/requirements.txt with `--no-deps`: a dependency added to
pyproject.toml and not pinned there breaks the image build at its `pip check`, minutes into
CI. Said here first, by name."""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def normalized(requirement: str) -> str:
    return re.split(r"[ ;<>=!\[~(]", requirement, maxsplit=1)[0].lower().replace("_", "-")


def test_every_dependency_of_the_images_is_pinned() -> None:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    extras = project["optional-dependencies"]
    wanted = [*project["dependencies"], *extras["openai"], *extras["anthropic"], *extras["gemini"]]
    pinned = {
        normalized(line)
        for line in (ROOT / "docker" / "requirements.txt").read_text().splitlines()
        if line and not line.startswith("#")
    }
    missing = sorted({normalized(r) for r in wanted if not r.startswith("evalrelay")} - pinned)
    assert not missing, f"pin {missing} in docker/requirements.txt (docs/cluster.md says how)"

"""Where an attached file lands in an agent's workspace: at the path the eval file wrote,
the label the prompt shows it under, unless that path climbs out of `inputs/`."""

from __future__ import annotations

from evalrelay.bridge.contract.job import AttachedFile
from evalrelay.worker.agents.inputs import placed


def attached(display: str, project: str, guideline: bool = False) -> AttachedFile:
    return AttachedFile(
        display_path=display, project_path=project, sha256="0" * 64, is_guideline=guideline
    )


def test_a_file_lands_at_its_label_under_inputs() -> None:
    files = [
        attached("./src/x.py", "evals/src/x.py"),
        attached("/docs/g.md", "docs/g.md", guideline=True),
        attached("src\\win.py", "evals/src/win.py"),
        attached("../common/y.py", "common/y.py"),  # would climb out: its project path
        attached("src/./x.py", "other/src/x.py"),  # the same label taken: its project path
    ]
    where = [f.workspace_path for f in placed(files, lambda f: f.project_path)]
    assert where == [
        "inputs/src/x.py",
        "inputs/docs/g.md",
        "inputs/src/win.py",
        "inputs/common/y.py",
        "inputs/other/src/x.py",
    ]
    assert [f.text for f in placed(files[:1], lambda f: f.project_path)] == ["evals/src/x.py"]

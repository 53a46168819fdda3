"""Which configuration an eval file gets: `evalrelay.yaml` at the root, else the
`.agentv/config.yaml` nearest to the file, as AgentV looks for it."""

from __future__ import annotations

import pickle
from pathlib import Path

from evalrelay.bridge.evalfile.cases import load_eval_file
from evalrelay.bridge.evalfile.project import Project, ProjectConfig
from evalrelay.bridge.prompt.build import request_for
from tests.conftest import WriteFiles

CASE = """\
evalcases:
  - id: a
    input_messages:
      - role: user
        content: [{type: file, value: style.instructions.md}, {type: text, value: Review.}]
"""


def test_the_nearest_agentv_config_makes_instructions_guidelines(project: WriteFiles) -> None:
    root = project(
        {
            "docs/examples/simple/.agentv/config.yaml": (
                "$schema: agentv-config-v2\nguideline_patterns: ['**/*.instructions.md']\n"
            ),
            "docs/examples/simple/evals/style.instructions.md": "Be terse.\n",
            "docs/examples/simple/evals/a.yaml": CASE,
        }
    )
    (root / "evalrelay.yaml").unlink()  # a repository of AgentV's, not of ours
    (root / ".git").mkdir()
    loaded = load_eval_file(root / "docs/examples/simple/evals/a.yaml")
    request = request_for(loaded.cases[0], None)
    assert request.guidelines is not None and "Be terse." in request.guidelines
    assert "Be terse." not in request.question


def test_a_project_pickles_after_its_guideline_patterns_are_compiled(tmp_path: Path) -> None:
    """A project travels to the process that loads a watcher's files and back; its compiled
    patterns may not pickle (pathspec's re2 backend), and are compiled again there."""
    project = Project(tmp_path, ProjectConfig(guideline_patterns=["**/*.md"]))
    assert project.is_guideline("docs/a.md")
    copy = pickle.loads(pickle.dumps(project))
    assert "guideline_spec" not in copy.__dict__
    assert copy.is_guideline("docs/a.md") and not copy.is_guideline("a.py")

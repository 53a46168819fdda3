"""The README's walkthrough runs as written: its quick start on a copy of examples/, then
its first eval file, targets, comparison and reports in a new project made of the files
the README shows, each command on the embedded default (no Redis URL) in a new home, as a
newcomer would run them. A command exits 0 unless the README says `# exits N` beside it.
"""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

from tests.bridge.cli.test_run import evalrelay
from tests.conftest import embedded_env, read_jsonl
from tests.docs.documented import README, ROOT, Block, Shown, blocks, commands_in

EXITS = re.compile(r"\bexits (\d+)\b")
FILE_NAME = re.compile(r"^# ([\w./-]+\.ya?ml)\n")
"""A YAML block whose first line names its file: `# evals/capitals.yaml`."""


def section(title: str) -> list[Block]:
    """The README's code blocks under the heading `title`, in order."""
    found = [block for block in blocks(README) if block.section == title]
    assert found, f"README.md has no code block under '## {title}'"
    return found


def run_as_shown(shown: Shown, env: dict[str, str], cwd: Path) -> subprocess.CompletedProcess[str]:
    """One command of the README, checked against the exit status it says (0 if none)."""
    done = evalrelay(*shown.argv, env=env, cwd=cwd)
    said = EXITS.search(shown.comment)
    expected = int(said.group(1)) if said else 0
    assert done.returncode == expected, (
        f"{shown.where}: `evalrelay {' '.join(shown.argv)}` exited {done.returncode}, "
        f"the README says {expected}\n{done.stdout}\n{done.stderr}"
    )
    return done


def play(title: str, project: Path, env: dict[str, str]) -> list[str]:
    """Write the section's files and run its commands, in the order the README shows
    them; the output of each command."""
    said = []
    for block in section(title):
        named = FILE_NAME.match(block.text)
        if block.info == "yaml" and named:
            path = project / named.group(1)
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(block.text)
            continue
        for shown in commands_in(block):
            done = run_as_shown(shown, env, project)
            said.append(" ".join((done.stdout + done.stderr).split()))
    return said


def test_the_quick_start_runs_as_written(tmp_path: Path, private_home: Path) -> None:
    shutil.copytree(
        ROOT / "examples", tmp_path / "examples", ignore=shutil.ignore_patterns("results")
    )
    shown = [s for block in section("Quick start") for s in commands_in(block)]
    assert shown and shown[0].argv[:2] == ["run", "examples/evals/quickstart.yaml"]
    env = embedded_env(private_home)
    said = {
        " ".join(s.argv): " ".join(run_as_shown(s, env, tmp_path).stdout.split()) for s in shown
    }

    cases = (tmp_path / "examples/evals/quickstart.yaml").read_text().count("  - id: ")
    (results,) = (tmp_path / "examples/results").glob("*.jsonl")
    assert len(read_jsonl(results)) == cases
    assert results.with_name(results.name.replace(".jsonl", ".html")).is_file()
    assert f"quickstart.yaml: {cases} cases OK" in said["validate examples"]
    rendered = said["render examples/evals/quickstart.yaml --target claude --json"]
    assert rendered.count('"wire": {"model": "claude-sonnet-4-5"') == cases


def test_the_first_eval_file_targets_comparison_and_reports_run_as_written(
    tmp_path: Path, private_home: Path
) -> None:
    project = tmp_path / "my-evals"
    project.mkdir()
    (project / "evalrelay.yaml").write_text("")  # "with an evalrelay.yaml (it may be empty)"
    # A wide terminal, so the failed cases' table keeps each reason on one line.
    env = embedded_env(private_home, "OPENAI_API_KEY") | {"COLUMNS": "200"}

    first = play("Your first eval file", project, env)
    assert "evals/capitals.yaml: 2 cases OK" in first[0]
    assert "[User]: What is the capital of France?" in first[1]
    assert "answer does not contain 'lima', even ignoring case" in first[2]

    play("Targets", project, env)
    (on_oracle,) = [p for p in (project / "results").glob("*.jsonl") if _target(p) == {"oracle"}]
    assert all(line["passed"] for line in read_jsonl(on_oracle))

    compared = play("Comparing targets", project, env)
    # Two cases cannot show a difference: the exact test's p is 0.5 at best.
    assert "oracle vs guesser: no detectable difference" in compared[0]
    assert "over 2 cases, p 0.500 (Holm 0.500)" in compared[0]
    assert "no regression in 2 results (2 improved)" in compared[1]

    play("Reports", project, env)
    assert (project / "ci" / "evals.xml").is_file()
    assert (project / "report.html").is_file()
    (named,) = (project / "results").glob("first-*.jsonl")
    for kind in (".html", ".junit.xml", ".md"):
        assert named.with_name(named.stem + kind).is_file(), kind


def _target(results: Path) -> set[object]:
    return {line["target"] for line in read_jsonl(results)}

"""Hostile eval files through `evalrelay validate` and a real watcher: every one refused with
`path:line:col`, none crashing, hanging or stopping the process that reads it."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path
from subprocess import CompletedProcess

import pytest

from tests.bridge.evalfile.hostile import HOSTILE, write_hostile
from tests.conftest import Processes, WriteFiles, wait_for

LOCATED = re.compile(r"^(?P<path>/\S+?):(?P<line>\d+):(?P<column>\d+): ")


def validate(path: Path, env: dict[str, str]) -> CompletedProcess[str]:
    """`evalrelay validate` on one file, as a process that must end within 20 s."""
    return subprocess.run(
        [sys.executable, "-m", "evalrelay", "validate", str(path)],
        capture_output=True,
        text=True,
        timeout=20,
        stdin=subprocess.DEVNULL,
        env=env,
    )


@pytest.fixture(scope="module")
def validated(tmp_path_factory: pytest.TempPathFactory) -> dict[Path, CompletedProcess[str]]:
    """`evalrelay validate` run once on each hostile file, for the tests below to read: a
    process each (about a second of imports), so not again for every test."""
    root = tmp_path_factory.mktemp("hostile") / "project"
    (root / "evals").mkdir(parents=True)
    (root / "evalrelay.yaml").write_text('guideline_patterns: ["**/*.instructions.md"]\n')
    (root / "targets.yaml").write_text("targets: []\n")
    env = {k: v for k, v in os.environ.items() if k != "EVALRELAY_REDIS_URL"}
    env["EVALRELAY_HOME"] = str(root.parent / "home")
    return {path: validate(path, env) for path in write_hostile(root / "evals")}


def test_validate_refuses_each_hostile_file_with_its_place_and_no_traceback(
    validated: dict[Path, CompletedProcess[str]],
) -> None:
    for path, done in validated.items():
        said = done.stdout + done.stderr
        assert done.returncode == 1, f"{path.name}: {said}"
        assert "Traceback" not in said, f"{path.name}: {said}"
        first = said.splitlines()[0]
        located = LOCATED.match(first)
        assert located and located["path"] == str(path), f"{path.name}: {said}"


def test_hostile_messages_say_what_is_wrong(validated: dict[Path, CompletedProcess[str]]) -> None:
    said = {p.name: done.stdout for p, done in validated.items()}
    assert (
        ":4:33: not a YAML text file: special characters are not allowed ('\\x00')"
        in (said["nul-byte.yaml"])
    )
    assert "nested more than 64 levels deep" in said["brackets.yaml"]
    assert "nested more than 64 levels deep" in said["closed-brackets.yaml"]
    assert "nested more than 64 levels deep" in said["deep-mapping.yaml"]
    assert "aliases expand to more than 200000 values" in said["alias-bomb.yaml"]
    assert "stands for a value that contains it" in said["recursive-alias.yaml"]
    assert "not UTF-8 text" in said["latin1.yaml"]
    assert "File name too long" in said["long-name.yaml"]
    assert "not a regular file" in said["fifo.yaml"]
    assert (
        ":5:41: case 'h': evalcases[0].evaluators[0].pattern: not a valid regular "
        in (said["bad-regex.yaml"])
    )
    assert "script is empty" in said["empty-script.yaml"]
    assert "Input should be less than or equal to 1000" in said["huge-repeats.yaml"]
    assert "Input should be a finite number" in said["endless-timeout.yaml"]
    assert "less than or equal to 14400" in said["over-cap-timeout.yaml"]


def test_a_watcher_sends_each_hostile_file_to_failed_and_goes_on(
    project: WriteFiles, processes: Processes
) -> None:
    root = project({"targets.yaml": "targets:\n  - {name: fast, provider: mock}\n"})
    inbox = root / "inbox"
    inbox.mkdir()
    processes.start("watch", str(inbox), "--target", "mock", name="watcher")
    wait_for(lambda: "watching" in processes.log("watcher"), 30, "the watcher to start")
    hostile = write_hostile(inbox)
    failed = inbox / "failed"
    wait_for(lambda: all((failed / p.name).exists() for p in hostile), 60, "every file in failed/")
    (inbox / "good.yaml").write_text(
        "evalcases:\n  - id: g\n    input_messages: [{role: user, content: hi}]\n"
    )
    wait_for(lambda: (inbox / "queued" / "good.yaml").exists()
             or (inbox / "done" / "good.yaml").exists(), 30, "the good file to run")  # fmt: skip
    for path in hostile:
        error = (failed / f"{path.name}.error.txt").read_text()
        assert LOCATED.match(error), f"{path.name}: {error}"
    assert "Traceback" not in processes.log("watcher")
    assert len(HOSTILE) + 1 == len(hostile)

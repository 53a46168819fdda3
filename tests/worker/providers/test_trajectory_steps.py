"""How a shell command is told apart as a read or a search, and how outputs are cut."""

from __future__ import annotations

import pytest

from evalrelay.bridge.results.trajectory import trimmed
from evalrelay.worker.providers.trajectory.steps import command_kind


@pytest.mark.parametrize(
    ("command", "expected"),
    [
        ("/bin/bash -lc \"cat 'inputs/a b.py'\"", ("read", ["inputs/a b.py"])),
        ("sed -n '1,20p' src/x.py", ("read", ["src/x.py"])),
        ("head -n 5 a.txt b.txt", ("read", ["a.txt", "b.txt"])),
        ("rg -n todo src", ("search", [])),
        ("bash -lc 'ls -la'", ("search", [])),
        ("cat a.txt | wc -l", ("command", [])),
        ("cat a.txt > b.txt", ("command", [])),
        ("echo RAN-$((6*7))", ("command", [])),
        ("cat", ("command", [])),
        ("python -m pytest", ("command", [])),
        ("echo 'unclosed", ("command", [])),
    ],
)
def test_command_kinds(command: str, expected: tuple[str, list[str]]) -> None:
    assert command_kind(command) == expected


def test_a_long_output_keeps_its_head_and_tail() -> None:
    text = "h" * 3000 + "m" * 5000 + "t" * 1000
    cut, removed = trimmed(text, 4000)
    assert removed == 5000
    assert cut == "h" * 3000 + "\n[... 5000 characters cut ...]\n" + "t" * 1000
    assert trimmed("short", 4000) == ("short", 0)

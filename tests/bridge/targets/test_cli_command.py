"""Which `cli` command templates put a placeholder inside a script an interpreter runs."""

from __future__ import annotations

import pytest

from bridge.targets.cli_command import placeholders_in_scripts


@pytest.mark.parametrize(
    ("command", "found"),
    [
        ("sh -c 'agent {prompt}'", [("sh", "-c", "{prompt}")]),
        ("sh -c {PROMPT}", [("sh", "-c", "{PROMPT}")]),
        ("/bin/bash -lc 'agent < {prompt_file}'", [("bash", "-lc", "{prompt_file}")]),
        ("bash -o pipefail -e -c 'a {files} | b'", [("bash", "-c", "{files}")]),
        ("env X=1 timeout 60 zsh -c 'cd {workspace}'", [("zsh", "-c", "{workspace}")]),
        ('cmd.exe /d /C "agent {prompt}"', [("cmd.exe", "/C", "{prompt}")]),
        ("pwsh -ExecutionPolicy Bypass -Command 'a {prompt}'", [("pwsh", "-Command", "{prompt}")]),
        ("python3.12 -c 'print(\"{prompt}\")'", [("python3.12", "-c", "{prompt}")]),
        ("node -e 'run(`{prompt}`)'", [("node", "-e", "{prompt}")]),
        (["perl", "-e", "system('{output_file}')"], [("perl", "-e", "{output_file}")]),
    ],
)
def test_a_placeholder_in_a_script_is_found(command: str, found: list[tuple[str, ...]]) -> None:
    assert placeholders_in_scripts(command) == found


@pytest.mark.parametrize(
    "command",
    [
        'sh -c \'agent --task "$1" --out "$2"\' sh {prompt} {output_file}',
        "agent --prompt {prompt} --files {files}",
        "sh run-agent.sh -c {prompt}",  # a script file: `-c` is the script's own option
        "python agent.py -c {prompt}",
        "sh -c 'agent < task.md'",
        "awk '{print}' {task_file}",  # not a placeholder of evalrelay's
    ],
)
def test_a_placeholder_passed_as_its_own_argument_is_fine(command: str) -> None:
    assert placeholders_in_scripts(command) == []

"""Which `cli` command templates put a placeholder inside a script an interpreter runs."""

from __future__ import annotations

from pathlib import Path

import pytest

from evalrelay.bridge.targets.cli_command import placeholders_in_scripts, shell_scripts
from evalrelay.bridge.targets.targets_file import load_targets_file


@pytest.mark.parametrize(
    ("command", "found"),
    [
        ("sh -c 'agent {prompt}'", [("sh", "-c", "{prompt}")]),
        ("sh -c {PROMPT}", [("sh", "-c", "{PROMPT}")]),
        ("/bin/bash -lc 'agent {PROMPT} > {OUTPUT_FILE}'", [("bash", "-lc", "{PROMPT}")]),
        ("bash -o pipefail -e -c 'a {files} | b'", [("bash", "-c", "{files}")]),
        ("fish -c 'cd {workspace}'", [("fish", "-c", "{workspace}")]),  # not POSIX quoting
        ('cmd.exe /d /C "agent {prompt}"', [("cmd.exe", "/C", "{prompt}")]),
        ("pwsh -ExecutionPolicy Bypass -Command 'a {prompt}'", [("pwsh", "-Command", "{prompt}")]),
        ("python3.12 -c 'print(\"{prompt}\")'", [("python3.12", "-c", "{prompt}")]),
        ("node -e 'run(`{prompt}`)'", [("node", "-e", "{prompt}")]),
        (["perl", "-e", "system('{output_file}')"], [("perl", "-e", "{output_file}")]),
        ("python3 -c 'open(\"{output_file}\")'", [("python3", "-c", "{output_file}")]),
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


@pytest.mark.parametrize(
    "command",
    [
        "bash -c ' mkdir -p out && echo \"Done.\" > {OUTPUT_FILE} '",
        "/bin/bash -lc 'agent < {prompt_file}'",
        "env X=1 timeout 60 zsh -c 'cd {workspace} && agent > {output_file}'",
        ["sh", "-c", "cat {task_file} | agent"],
    ],
)
def test_the_paths_evalrelay_makes_may_stand_in_a_posix_shells_script(
    command: str | list[str],
) -> None:
    """As AgentV's own targets write them: the worker fills them in shell-quoted."""
    assert placeholders_in_scripts(command) == []


def test_the_script_tokens_are_found_for_quoting() -> None:
    tokens = ["env", "X=1", "bash", "-o", "pipefail", "-c", "a > {output_file}", "b", "{prompt}"]
    assert shell_scripts(tokens) == {6}
    assert shell_scripts(["python3", "-c", "x"]) == set()


def test_an_agentv_look_alike_catalog_loads(tmp_path: Path) -> None:
    """A providers.yaml shaped like AgentV's examples: a mock agent written in `bash -c`
    that writes its answer to {OUTPUT_FILE}."""
    catalog = tmp_path / "providers.yaml"
    catalog.write_text(
        "providers:\n"
        "  - id: cli\n"
        '    command: "bash -c \' printf \\"changed\\\\n\\" > notes.txt && echo\n'
        '      \\"Done.\\" > {OUTPUT_FILE} \'"\n'
        "    label: look_alike_agent\n"
    )
    loaded = load_targets_file(catalog)
    assert loaded["look_alike_agent"].kind == "cli"

"""The command group as a user meets it: every option of every command says what it is for."""

from __future__ import annotations

import click
import pytest
from click.testing import CliRunner

from evalrelay.bridge.cli.main import cli


@pytest.mark.parametrize("name", sorted(cli.every_command()))
def test_every_option_of_a_command_has_a_help_text(name: str) -> None:
    command = cli.every_command()[name]
    silent = [
        "/".join(param.opts)
        for param in command.params
        if isinstance(param, click.Option) and not param.hidden and not param.help
    ]
    assert not silent, f"`evalrelay {name} --help` shows no help for {', '.join(silent)}"
    assert command.help, f"`evalrelay {name} --help` says nothing of what the command does"


def test_report_help_says_what_each_file_option_writes() -> None:
    shown = " ".join(CliRunner().invoke(cli, ["report", "--help"]).output.split())
    assert "Write the HTML report" in shown
    assert "Write the JUnit XML report" in shown
    assert "Write the Markdown summary to this file" in shown

"""The `evalrelay` entry point: wires up the commands and turns errors into messages."""

from __future__ import annotations

import sys

import click

from bridge.cli.render import render_command
from bridge.cli.validate import validate_command
from bridge.errors import EvalrelayError


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(package_name="evalrelay")
def cli() -> None:
    """Run eval cases against LLM APIs and coding agents, on one machine or many."""


cli.add_command(validate_command)
cli.add_command(render_command)


def main() -> None:
    """Run the CLI; evalrelay's own errors print as one message on stderr, never a traceback."""
    try:
        cli.main(standalone_mode=False)
    except EvalrelayError as exc:
        click.echo(f"error: {exc}", err=True)
        sys.exit(1)
    except click.exceptions.Abort:
        click.echo("Aborted.", err=True)
        sys.exit(130)
    except click.ClickException as exc:
        exc.show()
        sys.exit(exc.exit_code)
    except KeyboardInterrupt:
        sys.exit(130)

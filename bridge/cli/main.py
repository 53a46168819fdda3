"""The `evalrelay` entry point: wires up the commands and turns errors into messages."""

from __future__ import annotations

import logging
import sys

import click
from rich.console import Console
from rich.logging import RichHandler

from bridge.cli.render import render_command
from bridge.cli.run import run_command
from bridge.cli.validate import validate_command
from bridge.errors import EvalrelayError, InvalidFileError


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(package_name="evalrelay")
@click.option("-v", "--verbose", count=True, help="More log output (-v info, -vv debug).")
def cli(verbose: int) -> None:
    """Run eval cases against LLM APIs and coding agents, on one machine or many."""
    level = (logging.WARNING, logging.INFO, logging.DEBUG)[min(verbose, 2)]
    logging.basicConfig(
        level=level,
        format="%(message)s",
        datefmt="[%X]",
        handlers=[RichHandler(console=Console(stderr=True), show_path=False)],
    )
    logging.getLogger("kombu").setLevel(max(level, logging.WARNING))


cli.add_command(validate_command)
cli.add_command(render_command)
cli.add_command(run_command)


def main() -> None:
    """Run the CLI; evalrelay's own errors print as one message on stderr, never a traceback."""
    try:
        cli.main(standalone_mode=False)
    except InvalidFileError as exc:
        for diagnostic in exc.diagnostics:
            click.echo(str(diagnostic), err=True)
        sys.exit(1)
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

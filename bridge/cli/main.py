"""The `evalrelay` entry point: wires up the commands and turns errors into messages."""

from __future__ import annotations

import logging
import signal
import sys

import click
from rich.logging import RichHandler

from bridge.cli.collect import collect_command
from bridge.cli.export import export_command
from bridge.cli.health import health_command
from bridge.cli.once import Commands
from bridge.cli.render import render_command
from bridge.cli.report import compare_command, report_command
from bridge.cli.resume import resume_command
from bridge.cli.retry import retry_command
from bridge.cli.run import run_command
from bridge.cli.serve import serve_command
from bridge.cli.status import status_command
from bridge.cli.terminal import TerminalConsole, echo
from bridge.cli.validate import validate_command
from bridge.cli.watch import watch_command
from bridge.cli.worker import worker_command
from bridge.cli.workspaces import provision_command, unlock_command
from bridge.errors import EvalrelayError, InvalidFileError
from bridge.masking import mask_logs
from bridge.targets.settings import DEFAULT_KEY_VARIABLES

QUIET_LOGGERS = (
    *("httpx", "httpx2", "httpcore", "httpcore2", "h11", "h2", "hpack", "urllib3", "aiohttp"),
    *("openai", "anthropic", "google.genai", "google_genai", "websockets"),
)
"""Libraries whose debug output may carry a key: the HTTP clients the vendors' SDKs use
(their current releases log as `httpx2` and `httpcore2`, Google's as `google.genai`)."""


@click.group(cls=Commands, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(package_name="evalrelay")
@click.option("-v", "--verbose", count=True, help="More log output (-v info, -vv debug).")
def cli(verbose: int) -> None:
    """Run eval cases against LLM APIs and coding agents, on one machine or many."""
    level = (logging.WARNING, logging.INFO, logging.DEBUG)[min(verbose, 2)]
    logging.basicConfig(
        level=level,
        format="%(message)s",
        datefmt="[%X]",
        handlers=[RichHandler(console=TerminalConsole(stderr=True), show_path=False)],
    )
    logging.getLogger("kombu").setLevel(max(level, logging.WARNING))
    # The HTTP and SDK libraries log request and response headers at DEBUG, and some
    # servers echo the key in them: no verbosity shows those.
    for name in QUIET_LOGGERS:
        logging.getLogger(name).setLevel(logging.WARNING)
    # And whatever is logged, by any library at any level, is masked of the secrets held.
    mask_logs(DEFAULT_KEY_VARIABLES)


cli.add_command(validate_command)
cli.add_command(render_command)
for command in (
    run_command,
    worker_command,
    collect_command,
    status_command,
    resume_command,
    retry_command,
    watch_command,
    provision_command,
    unlock_command,
    report_command,
    compare_command,
    export_command,
    serve_command,
    health_command,
):
    cli.add_command(command)


def _interrupted(signum: int, frame: object) -> None:
    raise KeyboardInterrupt


def main() -> None:
    """Run the CLI; evalrelay's own errors print as one message on stderr, never a traceback."""
    # SIGTERM stops a command the way Ctrl-C does, so what it started (an embedded Redis, an
    # in-process worker and its entry in Redis) is stopped too. Long-running services set
    # their own handler.
    signal.signal(signal.SIGTERM, _interrupted)
    try:
        cli.main(standalone_mode=False)
    except InvalidFileError as exc:
        for diagnostic in exc.diagnostics:
            echo(str(diagnostic), err=True)
        sys.exit(1)
    except EvalrelayError as exc:
        echo(f"error: {exc}", err=True)
        sys.exit(1)
    except click.exceptions.Abort:
        click.echo("Aborted.", err=True)
        sys.exit(130)
    except click.ClickException as exc:
        exc.show()
        sys.exit(exc.exit_code)
    except KeyboardInterrupt:
        sys.exit(130)


if __name__ == "__main__":
    main()

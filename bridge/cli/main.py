"""The `evalrelay` entry point: wires up the commands and turns errors into messages."""

from __future__ import annotations

import atexit
import gc
import logging
import signal
import sys

import click
from rich.logging import RichHandler

from evalrelay.bridge.cli.once import Commands
from evalrelay.bridge.cli.terminal import LOG_FORMAT, PrintableFormatter, TerminalConsole, echo
from evalrelay.bridge.errors import EvalrelayError, InvalidFileError
from evalrelay.bridge.masking import mask_logs
from evalrelay.bridge.private import keep_private
from evalrelay.bridge.secret_files import load_secret_files
from evalrelay.bridge.targets.key_variables import DEFAULT_KEY_VARIABLES

QUIET_LOGGERS = (
    *("httpx", "httpx2", "httpcore", "httpcore2", "h11", "h2", "hpack", "urllib3", "aiohttp"),
    *("openai", "anthropic", "google.genai", "google_genai", "websockets"),
)
"""Libraries whose debug output may carry a key: the HTTP clients the vendors' SDKs use
(their current releases log as `httpx2` and `httpcore2`, Google's as `google.genai`)."""


COMMANDS = {
    "validate": "evalrelay.bridge.cli.validate:validate_command",
    "render": "evalrelay.bridge.cli.render:render_command",
    "run": "evalrelay.bridge.cli.run:run_command",
    "worker": "evalrelay.bridge.cli.worker:worker_command",
    "collect": "evalrelay.bridge.cli.collect:collect_command",
    "status": "evalrelay.bridge.cli.status:status_command",
    "resume": "evalrelay.bridge.cli.resume:resume_command",
    "retry": "evalrelay.bridge.cli.retry:retry_command",
    "regrade": "evalrelay.bridge.cli.regrade:regrade_command",
    "pause": "evalrelay.bridge.cli.steer:pause_command",
    "unpause": "evalrelay.bridge.cli.steer:unpause_command",
    "cancel": "evalrelay.bridge.cli.steer:cancel_command",
    "limit": "evalrelay.bridge.cli.limit:limit_command",
    "watch": "evalrelay.bridge.cli.watch:watch_command",
    "provision": "evalrelay.bridge.cli.workspaces:provision_command",
    "unlock": "evalrelay.bridge.cli.workspaces:unlock_command",
    "report": "evalrelay.bridge.cli.report:report_command",
    "compare": "evalrelay.bridge.cli.report:compare_command",
    "export": "evalrelay.bridge.cli.export:export_command",
    "serve": "evalrelay.bridge.cli.serve:serve_command",
    "health": "evalrelay.bridge.cli.health:health_command",
    "gc": "evalrelay.bridge.cli.gc:gc_command",
}
"""Each command's click object, imported when the command is used."""


@click.group(cls=Commands, lazy=COMMANDS, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(package_name="evalrelay")
@click.option("-v", "--verbose", count=True, help="More log output (-v info, -vv debug).")
def cli(verbose: int) -> None:
    """Run eval cases against LLM APIs and coding agents, on one machine or many."""
    keep_private()  # before any key is read: the programs it runs may not read them here
    load_secret_files()  # NAME_FILE: the key in this process's memory, in no environment
    level = (logging.WARNING, logging.INFO, logging.DEBUG)[min(verbose, 2)]
    console = TerminalConsole(stderr=True)
    handler: logging.Handler = RichHandler(console=console, show_path=False)
    if not console.is_terminal:  # a log file or a pipe: plain lines, neither padded nor cut
        handler = logging.StreamHandler(sys.stderr)
        handler.setFormatter(PrintableFormatter(LOG_FORMAT, "%X"))
    logging.basicConfig(level=level, format="%(message)s", datefmt="[%X]", handlers=[handler])
    logging.getLogger("kombu").setLevel(max(level, logging.WARNING))
    # The HTTP and SDK libraries log request and response headers at DEBUG, and some
    # servers echo the key in them: no verbosity shows those.
    for name in QUIET_LOGGERS:
        logging.getLogger(name).setLevel(logging.WARNING)
    # And whatever is logged, by any library at any level, is masked of the secrets held.
    mask_logs(DEFAULT_KEY_VARIABLES)


def _interrupted(signum: int, frame: object) -> None:
    raise KeyboardInterrupt


def main() -> None:
    """Run the CLI; evalrelay's own errors print as one message on stderr, never a traceback."""
    # SIGTERM stops a command the way Ctrl-C does, so what it started (an embedded Redis, an
    # in-process worker and its entry in Redis) is stopped too. Long-running services set
    # their own handler.
    signal.signal(signal.SIGTERM, _interrupted)
    # Run last at exit: the objects of the command's modules are left out of the
    # interpreter's last collection, which would only free what the process's end frees.
    atexit.register(gc.freeze)
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

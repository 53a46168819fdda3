"""Running an agent's command line: an argument list, never a shell, no terminal input."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

from evalrelay.bridge.results.result import Status
from evalrelay.worker.providers.base import ProviderFailure
from evalrelay.worker.providers.failures import STDERR_CHARS, tail


def find_executable(name: str, what: str) -> str:
    """The executable's full path on this worker's PATH, or an `infra_error` saying so."""
    found = shutil.which(name)
    if found is None:
        raise ProviderFailure(
            Status.INFRA_ERROR,
            f"{what} `{name}` was not found on this worker's PATH; install it or set the "
            f"target's `executable` to its full path",
        )
    return found


def run_command(argv: list[str], *, timeout: float, cwd: Path | None = None) -> str:
    """Run to completion; its standard output, or an `infra_error` with stderr's tail."""
    try:
        done = subprocess.run(
            argv,
            cwd=cwd,
            stdin=subprocess.DEVNULL,
            capture_output=True,
            text=True,
            errors="replace",
            timeout=timeout,
            check=False,
        )
    except subprocess.TimeoutExpired:
        raise ProviderFailure(
            Status.INFRA_ERROR, f"`{_shown(argv)}` did not return within {timeout:.0f} s"
        ) from None
    except OSError as exc:
        raise ProviderFailure(Status.INFRA_ERROR, f"cannot run `{_shown(argv)}`: {exc}") from None
    if done.returncode != 0:
        raise ProviderFailure(
            Status.INFRA_ERROR,
            f"`{_shown(argv)}` exited with code {done.returncode}: "
            f"{tail(done.stderr, STDERR_CHARS)}",
        )
    return done.stdout


def _shown(argv: list[str]) -> str:
    return " ".join([Path(argv[0]).name, *argv[1:3]]) + (" …" if len(argv) > 3 else "")

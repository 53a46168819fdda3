"""Headless Chromium (Debian's `chromium`) as the tests' browser: a page's DOM after its
scripts ran, and a screenshot of it, for a file or a page served on loopback."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

FLAGS = (
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--hide-scrollbars",
)
"""Without the background-networking flags, Chromium keeps trying Google's hosts, which
this machine's closed network refuses."""


def chromium() -> str:
    found = shutil.which("chromium") or shutil.which("chromium-browser")
    assert found, "the browser tests need Debian's chromium (apt-get install chromium)"
    return found


def _run(address: str, profile: Path, wait_ms: int, *action: str) -> str:
    done = subprocess.run(
        [
            chromium(),
            *FLAGS,
            f"--user-data-dir={profile}",
            f"--virtual-time-budget={wait_ms}",
            *action,
            address,
        ],
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    )
    return done.stdout


def dom(
    address: str, profile: Path, wait_ms: int = 2000, size: tuple[int, int] | None = None
) -> str:
    """The document at `address` (a file URI or an http URL, with any #fragment) once its
    scripts have run for `wait_ms` of the page's time; laid out in a window of `size`
    when the page's script measures what it drew."""
    window = (f"--window-size={size[0]},{size[1]}",) if size else ()
    return _run(address, profile, wait_ms, "--dump-dom", *window)


def screenshot(
    address: str, png: Path, profile: Path, size: tuple[int, int] = (1280, 900), wait_ms: int = 2000
) -> Path:
    """A PNG of the page as a user's window of `size` shows it."""
    _run(address, profile, wait_ms, f"--screenshot={png}", f"--window-size={size[0]},{size[1]}")
    assert png.stat().st_size > 0, f"chromium made no screenshot of {address}"
    return png

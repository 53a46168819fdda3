"""npm's promptfoo, for the tests that hold evalrelay's reading of promptfoo configs to
promptfoo's own. Installed once into a cache folder (`EVALRELAY_PROMPTFOO_CACHE`, default
`~/.cache/evalrelay-test-promptfoo`) at the version pinned here, as the agent CLIs are."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

VERSION = "0.121.20"


def promptfoo_bin() -> Path:
    """The folder holding `promptfoo`, installing it when missing."""
    cache = Path(
        os.environ.get("EVALRELAY_PROMPTFOO_CACHE")
        or Path.home() / ".cache" / "evalrelay-test-promptfoo"
    )
    bin_dir = cache / "node_modules" / ".bin"
    if (bin_dir / "promptfoo").exists():
        return bin_dir
    npm = shutil.which("npm")
    if npm is None:
        raise RuntimeError("the promptfoo parity tests need npm (Node.js 20+) to install promptfoo")
    cache.mkdir(parents=True, exist_ok=True)
    subprocess.run(
        [npm, "install", "--prefix", str(cache), "--no-audit", "--no-fund",
         f"promptfoo@{VERSION}"],
        check=True, stdout=subprocess.DEVNULL,
    )  # fmt: skip
    return bin_dir

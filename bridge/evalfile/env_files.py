"""`.env` files, read as AgentV reads them, for commands whose worker runs in-process.

A `run` on the embedded default (or with `--local-worker`) is the worker, so the keys its
targets name must be in its own environment. Each `.env` from the eval file's folder up
to the project root is read, the nearest first, and never overrides a variable already
set. The values stay in this process's environment: jobs carry `${VAR}` references only.
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from pathlib import Path

from dotenv import dotenv_values

from evalrelay.bridge.evalfile.project import searched_folders


def load_env_files(eval_files: Iterable[tuple[Path, Path]]) -> list[Path]:
    """Read the `.env` files near each (eval file, project root); returns those read."""
    read: list[Path] = []
    for path, root in eval_files:
        for folder in searched_folders(root, path):
            env_file = folder / ".env"
            if env_file in read or not env_file.is_file():
                continue
            for name, value in dotenv_values(env_file).items():
                if value is not None:
                    os.environ.setdefault(name, value)
            read.append(env_file)
    return read

"""An HTML report and its parts folder (`camp.html` and `camp.html.parts/`), put in place
together.

Both are written under hidden names beside the page, then renamed into place under a lock
on the folder that holds them, so two writers of one report (the collector and `report`)
cannot leave the page of one beside the parts of the other. The old parts folder is
renamed away before it is deleted: its files never mix with the new ones, and a report
that needs no folder takes the old one away too.
"""

from __future__ import annotations

import fcntl
import os
import secrets
import shutil
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from pathlib import Path

from evalrelay.bridge.results.summary import write_chunks_atomically

SUFFIX = ".parts"


class PartsFolder:
    """The parts folder of the report at `page`; made only when a part is written."""

    def __init__(self, page: Path) -> None:
        self.page = page
        self.name = page.name + SUFFIX
        """The folder as the page names it: beside it."""
        self.path = page.with_name(self.name)
        self.staging: Path | None = None

    def write(self, number: int, text: str) -> None:
        if self.staging is None:
            self.staging = _hidden(self.path)
            self.staging.mkdir()
        fd = os.open(self.staging / f"{number:04d}.js", os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666)
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            handle.write(text)
            handle.flush()
            os.fsync(handle.fileno())

    def publish(self, chunks: Iterable[str]) -> None:
        """Write the page from `chunks` (which write the parts as they go), then put the
        page and its parts, or no parts folder, in place."""
        temp = _hidden(self.page)
        try:
            write_chunks_atomically(temp, chunks)
            old = self._swap(temp)
        except BaseException:
            temp.unlink(missing_ok=True)
            if self.staging is not None:
                shutil.rmtree(self.staging, ignore_errors=True)
            raise
        if old is not None:
            shutil.rmtree(old, ignore_errors=True)

    def _swap(self, temp: Path) -> Path | None:
        """The old parts folder, moved out of the way."""
        with _locked(self.page.parent):
            old = self.path.rename(_hidden(self.path)) if self.path.exists() else None
            if self.staging is not None:
                self.staging.rename(self.path)
            os.replace(temp, self.page)
        return old


def _hidden(path: Path) -> Path:
    return path.with_name(f".{path.name}.{secrets.token_hex(6)}")


@contextmanager
def _locked(folder: Path) -> Iterator[None]:
    fd = os.open(folder, os.O_RDONLY)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)

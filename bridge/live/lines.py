"""Reading a results file that a collector is appending to: whole lines only, from a byte
offset, so each poll reads only what is new.

A collector writes a line and then fsyncs it; a reader may see the start of a line before
its end. Only bytes up to the last newline count; the rest is read on the next poll.
`retry` replaces the file: a reader that kept an offset into the old file starts over,
told by the file's identity (device and inode).
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO

from pydantic import ValidationError

from evalrelay.bridge.reports.lines import ResultHead

CHUNK_BYTES = 1 << 20


def head_of(line: bytes) -> ResultHead | None:
    """None for a line that is not a result (a file someone wrote by hand)."""
    try:
        return ResultHead.model_validate_json(line)
    except ValidationError:
        return None


@dataclass(frozen=True)
class Span:
    """Whole lines of one file: `data` holds the bytes from `start` to `end`."""

    identity: str
    start: int
    end: int
    size: int
    """The file's size when read."""
    data: bytes
    more: bool
    """Reading stopped at the limit, before the end of the file: poll again at once."""

    def lines(self) -> Iterator[bytes]:
        for line in self.data.split(b"\n"):
            if line.strip():
                yield line


def identity_of(stat: os.stat_result) -> str:
    return f"{stat.st_dev}:{stat.st_ino}"


def read_span(
    path: Path, after: int | None, identity: str | None, limit: int, tail: int
) -> Span | None:
    """The whole lines after byte `after` (of the file `identity` names, if given), at most
    about `limit` bytes of them (a longer line is read whole). With no `after`, another
    file, or an offset past the end (the file was rewritten), the lines of the last `tail`
    bytes. None when there is no file."""
    try:
        handle = path.open("rb")
    except FileNotFoundError:
        return None
    with handle:
        stat = os.fstat(handle.fileno())
        here = identity_of(stat)
        size = stat.st_size
        if after is None or identity not in (None, here) or after > size:
            start = _line_start(handle, max(0, size - tail))
        else:
            start = _line_start(handle, after)
        handle.seek(start)
        data = handle.read(min(limit, size - start))
        while b"\n" not in data and start + len(data) < size:
            extra = handle.read(min(CHUNK_BYTES, size - start - len(data)))
            if not extra:
                break
            data += extra
        cut = start + len(data) < size
        data = data[: data.rfind(b"\n") + 1]
        return Span(here, start, start + len(data), size, data, cut and bool(data))


def _line_start(handle: BinaryIO, offset: int) -> int:
    """`offset` if a line starts there, else where the next line starts."""
    if offset == 0:
        return 0
    handle.seek(offset - 1)
    position = offset - 1
    while chunk := handle.read(CHUNK_BYTES):
        found = chunk.find(b"\n")
        if found >= 0:
            return position + found + 1
        position += len(chunk)
    return position


def copy_whole_lines(source: Path, copy: Path) -> None:
    """`source`'s whole lines, as they are now, into `copy` (empty when there is no
    source yet): what a report is made from while a collector appends to the file."""
    last_newline = -1
    with copy.open("wb") as out:
        try:
            handle = source.open("rb")
        except FileNotFoundError:
            return
        with handle:
            size = os.fstat(handle.fileno()).st_size
            written = 0
            while written < size and (chunk := handle.read(min(CHUNK_BYTES, size - written))):
                found = chunk.rfind(b"\n")
                if found >= 0:
                    last_newline = written + found
                out.write(chunk)
                written += len(chunk)
        out.truncate(last_newline + 1)

"""Where each line of a results file sits in report order, to read the results back one at
a time.

Sorting 100,000 results would hold them all at once; sorting their keys and byte offsets
holds a few strings and numbers each, and a result is parsed again when its turn comes.
Ordering, counting and comparing read only the head of each result (`ResultHead`).
"""

from __future__ import annotations

import os
from array import array
from collections.abc import Callable, Iterator
from datetime import datetime
from pathlib import Path
from typing import Any, BinaryIO

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from evalrelay.bridge.errors import EvalrelayError
from evalrelay.bridge.results.result import Cost, ErrorInfo, Result, Status, Usage
from evalrelay.bridge.results.results_file import result_of_line


class HeadArtifacts(BaseModel):
    model_config = ConfigDict(extra="ignore")

    cached: Any = None
    latency_ms: int | None = None
    """An API call's own time, from send to answer: no wait for a slot or a retry in it."""


class ResultHead(BaseModel):
    """The fields of a result line that order, count and compare results: validating them
    alone takes half the time of a whole `Result` (its request, evaluators, artifacts)."""

    model_config = ConfigDict(extra="ignore")

    job_id: str
    case_id: str
    dataset: str
    target: str
    repeat: int = 0
    status: Status
    score: float | None = None
    passed: bool | None = None
    misses: list[str] = Field(default_factory=list)
    started_at: datetime
    finished_at: datetime
    duration_ms: int
    error: ErrorInfo | None = None
    usage: Usage | None = None
    cost: Cost | None = None
    judge_cost: Cost | None = None
    artifacts: HeadArtifacts = Field(default_factory=HeadArtifacts)

    @property
    def failed(self) -> bool:
        """Not ok, or graded and not passed: what `run` lists as failed."""
        return self.status is not Status.OK or self.passed is False

    @property
    def cached(self) -> bool:
        """As `bridge.reports.campaign.is_cached` tells of a whole result."""
        return self.artifacts.cached is True


def head_of_line(line: bytes, where: str) -> ResultHead:
    try:
        return ResultHead.model_validate_json(line)
    except ValidationError as exc:
        raise ValueError(f"{where}: not a result line: {exc}") from None


class ReportOrder:
    """The lines of one results file by target, dataset, case id and repeat (equal keys in
    file order), each target's lines together."""

    def __init__(
        self,
        path: Path,
        identity: tuple[int, int] | None,
        offsets: array[int],
        lengths: array[int],
        targets: dict[str, range],
    ) -> None:
        self.path = path
        self.identity = identity
        """The file's device and inode when scanned: `retry` replaces the file, and a new
        file must not be read at the old one's offsets."""
        self.offsets = offsets
        self.lengths = lengths
        self.targets = targets

    def __len__(self) -> int:
        return len(self.offsets)

    @classmethod
    def scan(cls, path: Path, seen: Callable[[ResultHead], object]) -> ReportOrder:
        """Read the file once, calling `seen` with each result's head in file order.

        Each line's key is one `bytes` (case id, repeat, offset, length), listed under its
        target and dataset: some 70 bytes a result where a tuple of them took 220, for the
        moment the keys are sorted (a collector's last pass of a million-case campaign)."""
        groups: dict[tuple[str, str], list[bytes]] = {}
        identity = None
        if path.exists():
            with path.open("rb") as handle:
                identity = _identity(handle)
                offset = 0
                for number, line in enumerate(handle, 1):
                    if not line.isspace():
                        result = head_of_line(line, f"{path}:{number}")
                        seen(result)
                        group = groups.setdefault((result.target, result.dataset), [])
                        group.append(_key(result.case_id, result.repeat, offset, len(line)))
                    offset += len(line)
        targets: dict[str, range] = {}
        offsets, lengths = array("q"), array("q")
        for (target, _), keys in sorted(groups.items()):
            keys.sort()  # the offset breaks ties: equal keys stay in file order
            start = targets[target].start if target in targets else len(offsets)
            for key in keys:
                offsets.append(int.from_bytes(key[-_OFFSET - _LENGTH : -_LENGTH], "big"))
                lengths.append(int.from_bytes(key[-_LENGTH:], "big"))
            keys.clear()
            targets[target] = range(start, len(offsets))
        return cls(path, identity, offsets, lengths, targets)

    def read(self, target: str | None = None) -> Iterator[Result]:
        """The results in report order (only `target`'s, if given), parsed one at a time."""
        for where, line in self._lines(target):
            yield result_of_line(line, where)

    def read_heads(self, target: str | None = None) -> Iterator[ResultHead]:
        for where, line in self._lines(target):
            yield head_of_line(line, where)

    def _lines(self, target: str | None) -> Iterator[tuple[str, bytes]]:
        span = range(len(self)) if target is None else self.targets.get(target, range(0))
        if not span:
            return
        with self.path.open("rb", buffering=0) as handle:
            if _identity(handle) != self.identity:
                raise EvalrelayError(
                    f"{self.path} was replaced while it was being read (by `retry`?); "
                    "run the command again"
                )
            name = str(self.path)
            for index in span:
                offset = self.offsets[index]
                handle.seek(offset)
                yield f"{name}: byte {offset}", handle.read(self.lengths[index])


_OFFSET = _LENGTH = 6
"""A key ends with the repeat (8 bytes), the offset (6: up to 256 TB) and the length."""


def _key(case_id: str, repeat: int, offset: int, length: int) -> bytes:
    """Bytes that sort as (case id, repeat, offset) do: UTF-8 keeps the code points' order,
    and the NUL after the id puts an id before the longer ones it begins."""
    return b"".join(
        (
            case_id.encode("utf-8", "surrogatepass"),
            b"\0",
            max(repeat, 0).to_bytes(8, "big"),
            offset.to_bytes(_OFFSET, "big"),
            length.to_bytes(_LENGTH, "big"),
        )
    )


def _identity(handle: BinaryIO) -> tuple[int, int]:
    stat = os.fstat(handle.fileno())
    return stat.st_dev, stat.st_ino

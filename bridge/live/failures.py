"""Failed results as they arrive: read from where the page's last poll stopped, never the
whole file again."""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass
from pathlib import Path

from evalrelay.bridge.live.feed import Failure
from evalrelay.bridge.live.lines import head_of, read_span
from evalrelay.bridge.reports.lines import ResultHead
from evalrelay.bridge.results.summary import failure_reason

READ_LIMIT = 1 << 20
"""Bytes read by one poll at most: a burst of results is read over several polls."""

TAIL_BYTES = 256 * 1024
"""A page's first poll reads only the end of the file: the newest failures, not all."""

LISTED = 50
"""Failures returned by one poll at most, the newest; the rest are only counted."""


@dataclass(frozen=True)
class NewFailures:
    failures: list[Failure]
    failed: int
    offset: int
    file: str | None
    more: bool


def new_failures(path: Path | None, after: int | None, file: str | None) -> NewFailures:
    """The failures in the whole lines after byte `after` of the results file (`file` says
    which file that offset is in), and where the next poll starts."""
    span = read_span(path, after, file, READ_LIMIT, TAIL_BYTES) if path is not None else None
    if span is None:
        return NewFailures([], 0, 0, None, False)
    newest: deque[Failure] = deque(maxlen=LISTED)
    failed = 0
    for line in span.lines():
        head = head_of(line)
        if head is not None and head.failed:
            failed += 1
            newest.append(failure(head))
    return NewFailures(list(newest), failed, span.end, span.identity, span.more)


def failure(head: ResultHead) -> Failure:
    return Failure(
        job_id=head.job_id,
        case_id=head.case_id,
        repeat=head.repeat,
        target=head.target,
        status=head.status.value,
        why=failure_reason(head),
    )

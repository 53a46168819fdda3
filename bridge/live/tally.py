"""Counts of a results file that Redis does not describe (a campaign known only by its
file, or any campaign while Redis is out of reach): lines, statuses, targets, first start.

The index page asks every 2 s, so each file's counts are kept and only lines appended
since are read; a file replaced (`retry`) or shortened is counted again from the start.
"""

from __future__ import annotations

import threading
from collections import Counter
from dataclasses import dataclass, field, replace
from datetime import datetime
from pathlib import Path

from evalrelay.bridge.live.lines import head_of, read_span

STEP_BYTES = 8 << 20
"""Read at a time when counting a file for the first time: a big file is never held whole."""


@dataclass
class Tally:
    identity: str | None = None
    offset: int = 0
    lines: int = 0
    counts: Counter[str] = field(default_factory=Counter)
    targets: set[str] = field(default_factory=set)
    first_started: datetime | None = None


class Tallies:
    """Each results file's counts, brought up to date when asked."""

    def __init__(self) -> None:
        self._tallies: dict[Path, Tally] = {}
        self._lock = threading.Lock()

    def of(self, path: Path) -> Tally | None:
        """`path`'s counts now (a copy, which later counts leave alone), or None when there
        is no such file."""
        with self._lock:
            tally = self._tallies.get(path) or Tally()
            while True:
                span = read_span(path, tally.offset, tally.identity, STEP_BYTES, tail=1 << 62)
                if span is None:
                    self._tallies.pop(path, None)
                    return None
                if span.identity != tally.identity or span.start != tally.offset:
                    tally = Tally(identity=span.identity, offset=span.start)
                for line in span.lines():
                    tally.lines += 1
                    head = head_of(line)
                    if head is None:
                        continue
                    tally.counts[head.status.value] += 1
                    tally.targets.add(head.target)
                    if tally.first_started is None or head.started_at < tally.first_started:
                        tally.first_started = head.started_at
                tally.offset = span.end
                if not span.more:
                    break
            self._tallies[path] = tally
            return replace(tally, counts=Counter(tally.counts), targets=set(tally.targets))

    def forget_all_but(self, paths: set[Path]) -> None:
        """Drop the counts of files no longer listed."""
        with self._lock:
            for path in set(self._tallies) - paths:
                del self._tallies[path]

"""A set of job ids that takes about 16 bytes an id: what a collector keeps of a campaign.

A collector writes each job once, so it keeps the id of every job its file holds; as a
Python set of strings that is some 120 bytes an id, and a campaign of a million cases held
120 MB for it alone. Job ids are 32 hexadecimal digits (`bridge.contract.job.job_id`): here
each is its 16 bytes, in one sorted buffer (found by bisection), plus a set of the ids
added since it was last merged, at most `RECENT` of them: the memory grows by 16 bytes an
id, and by 32 for a moment while the recent ones are merged. An id of another shape (none
is made today) is kept as it is.
"""

from __future__ import annotations

import bisect
from collections.abc import Iterable, Iterator

WIDTH = 16
"""Bytes of one id: 32 hexadecimal digits."""

RECENT = 1 << 14
"""Ids kept apart (a set: about 100 bytes each) until they are merged into the sorted buffer."""

BLOCK = 64
"""Sorted ids per block searched at once."""


def _packed(job_id: str) -> bytes | None:
    """The id's 16 bytes, or None when it is not 32 lowercase hexadecimal digits (its
    bytes would not give it back as it was written)."""
    if len(job_id) != 2 * WIDTH:
        return None
    try:
        packed = bytes.fromhex(job_id)
    except ValueError:
        return None
    # `fromhex` also takes upper case and spaces, which would not come back as written.
    return packed if len(packed) == WIDTH and job_id.lower() == job_id else None


class JobIds:
    """Which jobs a results file holds: `in`, `add`, `len` and iteration (ids as strings)."""

    def __init__(self, job_ids: Iterable[str] = ()) -> None:
        self._sorted = bytearray()
        self._fences: list[bytes] = []
        """The first id of each block of `BLOCK` sorted ids: a bisection of this list (in
        C) finds the block, and a search of its 1 KB the id."""
        self._recent: set[bytes] = set()
        self._other: set[str] = set()
        for job_id in job_ids:
            self.add(job_id)

    def __contains__(self, job_id: object) -> bool:
        if not isinstance(job_id, str):
            return False
        packed = _packed(job_id)
        if packed is None:
            return job_id in self._other
        return packed in self._recent or self._holds(packed)

    def add(self, job_id: str) -> None:
        packed = _packed(job_id)
        if packed is None:
            self._other.add(job_id)
        elif packed not in self._recent and not self._holds(packed):
            self._recent.add(packed)
            if len(self._recent) >= RECENT:
                self._merge()

    def __len__(self) -> int:
        return len(self._sorted) // WIDTH + len(self._recent) + len(self._other)

    def __iter__(self) -> Iterator[str]:
        view = memoryview(self._sorted)
        for start in range(0, len(view), WIDTH):
            yield view[start : start + WIDTH].hex()
        for packed in list(self._recent):
            yield packed.hex()
        yield from list(self._other)

    def _position(self, packed: bytes) -> int:
        """Where `packed` is, or would go, among the sorted ids (an index of an id)."""
        block = max(0, bisect.bisect_right(self._fences, packed) - 1)
        first = block * BLOCK
        blob = self._sorted
        last = min(first + BLOCK, len(blob) // WIDTH)
        return bisect.bisect_left(
            range(last), packed, lo=first, key=lambda i: bytes(blob[i * WIDTH : (i + 1) * WIDTH])
        )

    def _holds(self, packed: bytes) -> bool:
        if not self._fences:
            return False
        start = (max(0, bisect.bisect_right(self._fences, packed) - 1)) * BLOCK * WIDTH
        end = start + BLOCK * WIDTH
        found = self._sorted.find(packed, start, end)
        while found >= 0 and found % WIDTH:  # a match across two ids: look on
            found = self._sorted.find(packed, found + 1, end)
        return found >= 0

    def _merge(self) -> None:
        """The recent ids into the sorted bytes: one new buffer, no object per id."""
        old = memoryview(self._sorted)
        merged = bytearray()
        done = 0
        for packed in sorted(self._recent):
            at = self._position(packed)
            merged += old[done * WIDTH : at * WIDTH]
            merged += packed
            done = at
        merged += old[done * WIDTH :]
        old.release()
        self._sorted = merged
        self._recent = set()
        self._fences = [
            bytes(merged[start : start + WIDTH]) for start in range(0, len(merged), BLOCK * WIDTH)
        ]

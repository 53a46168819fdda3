"""A job's done mark (`done_key`): which attempt's result is in the stream, and which
publication put it there.

The mark is one integer, `attempt << COPY_BITS | copy`, where `copy` is a number drawn for
each publication (`bridge.delivery.publish.Publication`) and kept by its every resend. A
publication whose reply was lost (its connection dropped after Redis ran it) is sent
again; meeting a mark with its own copy number, the resend knows the result in the
stream is its own: published, not paid for twice. Meeting another copy's, it is a second
call of the same attempt (`bridge.results.paid`). The attempt is the mark's high bits; a
mark below `1 << COPY_BITS` is a bare attempt number (written by an evalrelay before
this rule, or by hand), which names no copy.

The marks are fields of a few thousand hashes per campaign (`bridge.keys.done_key`), which
Redis keeps packed while small; an integer, a mark is stored as one there (no string of
digits).
"""

from __future__ import annotations

import secrets

COPY_BITS = 32
"""Bits of a publication's copy number: two publications of one job attempt draw the
same number once in four billion, and then count as one."""


def new_copy() -> int:
    """A publication's copy number, the same for all its resends."""
    return secrets.randbits(COPY_BITS)


def done_mark(attempt: int, copy: int) -> int:
    return attempt << COPY_BITS | copy


def marked_attempt(mark: int) -> int:
    """The attempt a done mark names (a bare attempt number names itself)."""
    return mark >> COPY_BITS if mark >> COPY_BITS else mark


DONE_ATTEMPT_LUA = f"""
local function done_attempt(mark)
  local number = tonumber(mark or '0')
  if number >= {1 << COPY_BITS} then return math.floor(number / {1 << COPY_BITS}) end
  return number
end
"""
"""Lua prelude, no KEYS or ARGV of its own: defines `done_attempt(mark)`, the attempt a
done mark (a string, or false for none) names; 0 for none. Exact while marks stay below
2^53 (attempts below 2^21)."""

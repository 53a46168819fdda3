"""A worker's garbage collection, tuned once it has warmed up.

By the end of its first batch a worker process holds what it keeps until it exits: its
modules, the vendors' SDKs (imported on first use), their clients and connection pools,
hundreds of thousands of objects tracked by the cycle collector. Each full pass of the
collector walks them all unless `gc.freeze` moves them out of its sight, once. And an API
worker's loop keeps many calls open, whose objects outlive the youngest generation's 700
allocations: collected every 10,000, they are looked at less often for the same garbage
found. docs/performance.md has the time this saves.
"""

from __future__ import annotations

import gc
import os
import threading

YOUNG_THRESHOLD = 10_000
"""Allocations between two collections of the youngest generation (Python's default: 700)."""

_settled: set[int] = set()
_lock = threading.Lock()


def settle_once() -> None:
    """Collect, freeze what is left and space the young collections out; once per process
    (a forked child does its own)."""
    with _lock:
        if os.getpid() in _settled:
            return
        _settled.add(os.getpid())
    gc.collect()
    gc.freeze()
    _, middle, old = gc.get_threshold()
    gc.set_threshold(YOUNG_THRESHOLD, middle, old)

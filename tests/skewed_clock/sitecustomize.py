"""Loaded (on PYTHONPATH) only into the test processes whose wall clock libfaketime shifts
(tests/clocks.py), and only to let them sleep.

libfaketime with a true monotonic clock (`FAKETIME_DONT_FAKE_MONOTONIC=1`, without which
Python's lock and event timeouts never end) gets `clock_nanosleep(CLOCK_MONOTONIC,
TIMER_ABSTIME)` wrong: the kernel is handed a negative time, and Python 3.11's `time.sleep`
fails with EINVAL (wolfcw/libfaketime#426). This `sleep` waits on an event instead, which
libfaketime leaves alone. Nothing here touches the wall clock: libfaketime shifts it.
"""

from __future__ import annotations

import threading
import time


def _sleep(seconds: float) -> None:
    if seconds < 0:
        raise ValueError("sleep length must be non-negative")
    threading.Event().wait(seconds)


time.sleep = _sleep

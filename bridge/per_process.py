"""One object per process, made on first use: a forked child makes its own, as the threads
and connections an object holds do not survive a fork."""

from __future__ import annotations

import os
import threading
from collections.abc import Callable
from typing import Generic, TypeVar

T = TypeVar("T")


class PerProcess(Generic[T]):
    """Call it for this process's object (`make()` the first time in each process)."""

    def __init__(self, make: Callable[[], T]) -> None:
        self._make = make
        self._made: dict[int, T] = {}
        self._lock = threading.Lock()

    def __call__(self) -> T:
        pid = os.getpid()
        with self._lock:
            if pid not in self._made:
                self._made.clear()
                self._made[pid] = self._make()
            return self._made[pid]

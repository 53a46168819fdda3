"""Python's cycle collector held off while a large file or campaign is built in bulk.

Loading, planning and sending a campaign creates millions of objects that live on and
hold no reference cycles. Each full pass of the collector walks every live object, and
the passes come more often as the heap grows, so on a large campaign they take most of
the loading and planning time (docs/performance.md has the figures). Held off for the bulk
step, the collector runs again as usual afterwards and finds whatever cycles it left.
"""

from __future__ import annotations

import gc
import threading
from contextlib import ContextDecorator
from typing import Any

_lock = threading.Lock()
_holders = 0
_was_enabled = True


class gc_paused(ContextDecorator):
    """Holds the cycle collector off for the block (or the decorated function). Nested and
    concurrent holds (threads) keep it off until the last one ends; it is then on again
    only if it was on before the first."""

    def __enter__(self) -> gc_paused:
        global _holders, _was_enabled
        with _lock:
            if _holders == 0:
                _was_enabled = gc.isenabled()
                gc.disable()
            _holders += 1
        return self

    def __exit__(self, *exc: Any) -> None:
        global _holders
        with _lock:
            _holders -= 1
            if _holders == 0 and _was_enabled:
                gc.enable()

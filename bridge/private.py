"""Keeping an evalrelay process's environment and memory from the processes it starts.

A worker or watcher holds every key in its environment, and the programs it runs (an
agent under evaluation, a grading script, a command of the operator's) run as the same
user. Any of them could read `/proc/<worker>/environ`, or attach a debugger, unless the
process is marked not dumpable (Linux's `PR_SET_DUMPABLE`): then only root may. A child
that executes a program starts dumpable again, with the environment it was given (a
clean one), so this takes nothing from it. Elsewhere than Linux this does nothing.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import logging
import sys

log = logging.getLogger(__name__)

PR_SET_DUMPABLE = 4
PR_GET_DUMPABLE = 3


def keep_private() -> bool:
    """Mark this process not dumpable; whether it now is (False off Linux, or refused)."""
    if not sys.platform.startswith("linux"):
        return False
    libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6", use_errno=True)
    if libc.prctl(PR_SET_DUMPABLE, 0, 0, 0, 0) != 0:
        log.warning(
            "this process could not be made private (prctl: errno %d): the programs it "
            "runs may read its environment",
            ctypes.get_errno(),
        )
        return False
    return True


def is_private() -> bool:
    """Whether this process is marked not dumpable (Linux only)."""
    if not sys.platform.startswith("linux"):
        return False
    libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6", use_errno=True)
    return bool(libc.prctl(PR_GET_DUMPABLE, 0, 0, 0, 0) == 0)

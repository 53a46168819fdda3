"""After its first batch a worker's long-lived objects are frozen, once per process."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap

from evalrelay.worker.heap import YOUNG_THRESHOLD


def test_settling_freezes_once_and_spaces_young_collections() -> None:
    script = textwrap.dedent(
        """
        import gc, json, os
        from evalrelay.worker.heap import settle_once
        before = (gc.get_freeze_count(), gc.get_threshold())
        settle_once()
        frozen = gc.get_freeze_count()
        kept = [[] for _ in range(1000)]  # made after: not frozen by a second call
        settle_once()
        child = os.fork()
        if child == 0:  # a forked child settles its own heap
            settle_once()
            os._exit(0 if gc.get_freeze_count() >= frozen + 1000 else 1)
        _, status = os.waitpid(child, 0)
        print(json.dumps([before, frozen, gc.get_freeze_count(), gc.get_threshold(), status]))
        """
    )
    out = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, check=True
    ).stdout
    before, frozen, after, threshold, child_status = json.loads(out)
    assert before[0] == 0 and before[1][0] == 700
    assert frozen > 1000  # the modules imported, at least
    assert after == frozen  # the second call did nothing
    assert threshold[0] == YOUNG_THRESHOLD
    assert child_status == 0

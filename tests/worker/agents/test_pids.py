"""`pid_alive`: a running process, one that is gone, and a zombie not yet reaped."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

from evalrelay.worker.agents.pids import pid_alive


def test_a_running_process_is_alive_and_an_ended_one_is_not() -> None:
    assert pid_alive(os.getpid())
    child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(30)"])
    try:
        assert pid_alive(child.pid)
    finally:
        child.kill()
    # Killed but not yet waited for: a zombie, which holds no work, counts as gone.
    deadline = time.monotonic() + 5
    while _state(child.pid) != "Z" and time.monotonic() < deadline:
        time.sleep(0.01)
    assert _state(child.pid) == "Z"
    assert not pid_alive(child.pid)
    child.wait()
    assert not pid_alive(child.pid)


def _state(pid: int) -> str:
    stat = Path(f"/proc/{pid}/stat").read_text()
    return stat[stat.rfind(")") + 2 :][:1]

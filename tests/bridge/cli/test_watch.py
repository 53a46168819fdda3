"""`evalrelay watch` tells its user what became of each file dropped, not only failures."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import time
from pathlib import Path

from tests.conftest import Processes, WriteFiles, one_turn_cases, wait_for


def test_watch_prints_a_line_per_file_taken_and_when_its_results_are_complete(
    project: WriteFiles, processes: Processes
) -> None:
    root = project({"inbox/.keep": ""})
    inbox = root / "inbox"
    processes.env = {k: v for k, v in processes.env.items() if k != "EVALRELAY_REDIS_URL"}
    processes.start("watch", str(inbox), "--target", "mock", name="watch")
    (inbox / "three.yaml").write_text(one_turn_cases(3))
    wait_for(lambda: "complete" in processes.log("watch"), 60, "the campaign to complete")
    log = processes.log("watch")
    taken = re.search(r"^three\.yaml: campaign (\S+), 3 jobs queued$", log, re.MULTILINE)
    assert taken, log
    campaign_id = taken[1]
    results = Path(root / "results" / f"{campaign_id}.jsonl").resolve()
    assert f"three.yaml: campaign {campaign_id} complete, 3 results (ok 3) in {results}" in log, log
    assert (inbox / "done" / "three.yaml").exists()


NESTED_LOOPS = (
    'prompts: ["{% for i in range(100000) %}{% for j in range(100000) %}{% endfor %}'
    '{% endfor %}"]\ntests:\n  - id: t1\n'
)
UNBOUNDED_TEMPLATES = (
    "template_limits: {iterations: 1000000000000, output_bytes: 100000000000, seconds: 3600}\n"
)


def children_of(pid: int) -> list[int]:
    """The processes whose parent is `pid`, from /proc."""
    found = []
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if int(fields[1]) == pid:
            found.append(int(stat.parent.name))
    return found


def peak_memory_mb(pid: int) -> float:
    status = Path(f"/proc/{pid}/status").read_text()
    return int(re.search(r"VmHWM:\s+(\d+) kB", status)[1]) / 1024  # type: ignore[index]


def watch(processes: Processes, inbox: Path) -> subprocess.Popen[bytes]:
    processes.env = {k: v for k, v in processes.env.items() if k != "EVALRELAY_REDIS_URL"}
    watcher = processes.start("watch", str(inbox), "--target", "mock", "--settle", "0.5", name="w")
    wait_for(lambda: "watching" in processes.log("w"), 30, "the watcher to start")
    return watcher


def test_template_bomb_goes_to_failed_and_the_next_file_is_taken(
    project: WriteFiles, processes: Processes
) -> None:
    root = project({"evalrelay.yaml": "", "inbox/.keep": ""})
    inbox = root / "inbox"
    watcher = watch(processes, inbox)
    (inbox / "bomb.yaml").write_text(NESTED_LOOPS)
    wait_for(lambda: (inbox / "failed" / "bomb.yaml").exists(), 60, "bomb.yaml in failed/")
    reason = (inbox / "failed" / "bomb.yaml.error.txt").read_text()
    assert f"{inbox}/bomb.yaml:1:11: template stopped: the template went over 100000" in reason
    (inbox / "good.yaml").write_text(one_turn_cases(1))
    wait_for(lambda: "good.yaml: campaign" in processes.log("w"), 60, "good.yaml taken")
    assert peak_memory_mb(watcher.pid) < 600


def test_file_loading_past_the_time_limit_goes_to_failed_and_the_next_is_taken(
    project: WriteFiles, processes: Processes
) -> None:
    config = UNBOUNDED_TEMPLATES + "load_limits: {seconds: 2}\n"
    root = project({"evalrelay.yaml": config, "inbox/.keep": ""})
    inbox = root / "inbox"
    watch(processes, inbox)
    (inbox / "slow.yaml").write_text(NESTED_LOOPS)
    (inbox / "after.yaml").write_text(one_turn_cases(1))
    wait_for(lambda: (inbox / "failed" / "slow.yaml").exists(), 60, "slow.yaml in failed/")
    assert (inbox / "failed" / "slow.yaml.error.txt").read_text() == (
        f"{inbox}/slow.yaml:1:1: loading it took more than 2 seconds; split the file, or raise "
        "`load_limits: {seconds: ...}` in evalrelay.yaml if the file really needs more\n"
    )
    wait_for(lambda: "after.yaml: campaign" in processes.log("w"), 60, "after.yaml taken")


def test_file_needing_more_memory_than_the_limit_goes_to_failed(
    project: WriteFiles, processes: Processes
) -> None:
    config = UNBOUNDED_TEMPLATES + "load_limits: {memory_mb: 1024}\n"
    root = project({"evalrelay.yaml": config, "inbox/.keep": ""})
    inbox = root / "inbox"
    watcher = watch(processes, inbox)
    (inbox / "big.yaml").write_text("prompts: [\"{{ 'x' * 4000000000 }}\"]\ntests:\n  - id: t1\n")
    wait_for(lambda: (inbox / "failed" / "big.yaml").exists(), 60, "big.yaml in failed/")
    assert (
        "loading it needed more than 1024 MB of memory"
        in (inbox / "failed" / "big.yaml.error.txt").read_text()
    )
    (inbox / "good.yaml").write_text(one_turn_cases(1))
    wait_for(lambda: "good.yaml: campaign" in processes.log("w"), 60, "good.yaml taken")
    assert peak_memory_mb(watcher.pid) < 600


def test_sigterm_while_a_file_loads_stops_the_watcher_within_seconds(
    project: WriteFiles, processes: Processes
) -> None:
    config = UNBOUNDED_TEMPLATES + "load_limits: {seconds: 600}\n"
    root = project({"evalrelay.yaml": config, "inbox/.keep": ""})
    inbox = root / "inbox"
    watcher = watch(processes, inbox)
    (inbox / "slow.yaml").write_text(NESTED_LOOPS)
    loading: list[int] = []

    def a_file_loads() -> bool:
        loading[:] = [c for f in children_of(watcher.pid) for c in children_of(f)]
        return bool(loading)

    wait_for(a_file_loads, 30, "the watcher's child to load slow.yaml")
    started = time.monotonic()
    os.kill(watcher.pid, signal.SIGTERM)
    watcher.wait(20)
    assert time.monotonic() - started < 10
    wait_for(lambda: not any(Path(f"/proc/{pid}").exists() for pid in loading), 5, "no child")
    assert (inbox / "slow.yaml").exists()  # not failed: the next watcher takes it

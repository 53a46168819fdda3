"""The watcher fed generated bad input: a hundred mutations of a good eval file dropped
at once into a live inbox. No traceback, no hang; every file either runs once (one
campaign, to `done/`) or lands in `failed/` beside its located errors."""

from __future__ import annotations

import os
import re

import redis

from evalrelay.bridge.queue.campaigns import list_campaigns
from tests.bridge.evalfile.test_fuzz import mutations
from tests.conftest import Processes, WriteFiles, wait_for

FILES = int(os.environ.get("WATCHER_FUZZ_FILES", "100"))
LOCATED = re.compile(r"^.+:\d+:\d+: ", re.MULTILINE)


def test_generated_bad_files_each_run_once_or_fail_with_their_errors(
    project: WriteFiles, processes: Processes, client: redis.Redis
) -> None:
    root = project({"targets.yaml": "targets:\n  - {name: fast, provider: mock}\n"})
    inbox = root / "inbox"
    inbox.mkdir()
    (inbox / "note.txt").write_text("a note\n")  # the file the good case attaches
    processes.worker(client, "w@test", "-c", "4")
    processes.start("watch", str(inbox), "--target", "mock", "--name", "fuzz", name="watcher")
    wait_for(lambda: client.hexists("evalrelay:watchers", "fuzz"), 30, "the watcher")
    names = [f"m{i:03}.yaml" for i in range(FILES)]
    for name, data in zip(names, mutations(FILES, seed=11), strict=True):
        (inbox / name).write_bytes(data)

    def ended(name: str) -> bool:
        return (inbox / "failed" / name).exists() or (inbox / "done" / name).exists()

    wait_for(lambda: all(ended(n) for n in names), 180, "every file in done/ or failed/")
    failed = sorted(p.name for p in (inbox / "failed").glob("*.yaml"))
    done = sorted(p.name for p in (inbox / "done").glob("*.yaml"))
    assert sorted(failed + done) == names  # each in one place, none left behind
    for name in failed:
        error = (inbox / "failed" / f"{name}.error.txt").read_text()
        assert LOCATED.search(error), f"{name}: {error}"
    sources = sorted(
        os.path.basename(info.sources[0]) for info in list_campaigns(client, limit=1000)
    )
    assert sources == done  # one campaign per file that ran
    assert "Traceback" not in processes.log("watcher")
    assert "Traceback" not in processes.log("w@test")
    print(f"\nwatcher fuzz: {len(done)} files ran, {len(failed)} failed with located errors")

"""`evalrelay watch` tells its user what became of each file dropped, not only failures."""

from __future__ import annotations

import re
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

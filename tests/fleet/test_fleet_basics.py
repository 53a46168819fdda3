"""Smoke test of the fleet harness: a detached campaign goes from a submitter host through
two worker hosts to a collector host, each host with its own address, name and files."""

from __future__ import annotations

import socket
import subprocess
import threading
from pathlib import Path

import pytest

from tests.conftest import one_turn_cases, read_jsonl, wait_for
from tests.fleet.netns import Fleet, Host

pytestmark = pytest.mark.fleet

TARGETS = "targets:\n  - {name: mock, provider: mock, latency_ms: 100}\n"
NOTE = "note-only-on-the-submitter 7f3a\n"
CASES = 30
ATTACHING = 3


def eval_file() -> str:
    """CASES one-turn cases, the last ATTACHING of which attach snippets/note.md."""
    attaching = "".join(
        f"  - {{id: att-{i}, input_messages: [{{role: user, content: "
        f"[{{type: text, value: 'Read the note.'}}, {{type: file, value: ./snippets/note.md}}]"
        f"}}]}}\n"
        for i in range(ATTACHING)
    )
    return one_turn_cases(CASES - ATTACHING) + attaching


def lines(path: Path) -> int:
    return len(path.read_text().splitlines()) if path.exists() else 0


def test_detached_campaign_across_hosts_lands_once_on_the_collector(fleet: Fleet) -> None:
    redis = fleet.add_redis()
    workers = [fleet.add_host("worker-1"), fleet.add_host("worker-2")]
    submitter, collector = fleet.add_host("submitter"), fleet.add_host("collector")
    redis.start()
    for worker in workers:
        worker.start("worker", "--name", worker.name, "-c", "4", name="worker")
    results = collector.folder / "results"
    collector.start("collect", "--out", str(results), "--name", "collector", name="collect")
    for worker in workers:
        fleet.wait_for_worker(worker.name)

    project = submitter.work / "project"
    (project / "snippets").mkdir(parents=True)
    (project / "evalrelay.yaml").write_text("results_dir: results\n")
    (project / "targets.yaml").write_text(TARGETS)
    (project / "snippets" / "note.md").write_text(NOTE)
    (project / "evals.yaml").write_text(eval_file())
    submitted_out = submitter.folder / "results"
    submitted = submitter.run(
        "run", "project/evals.yaml", "--detach", "--target", "mock", "--out", str(submitted_out)
    )
    assert submitted.returncode == 0, submitted.stderr
    campaign = submitted.stdout.strip()  # --detach prints the campaign id, and only it
    assert campaign and len(campaign.split()) == 1, submitted.stdout

    jsonl = results / f"{campaign}.jsonl"
    wait_for(lambda: lines(jsonl) >= CASES, 45, f"{CASES} lines in {jsonl}")
    status = submitter.run("status", campaign, env={"COLUMNS": "300"})
    assert status.returncode == 0, status.stderr
    assert f"{CASES}/{CASES}" in status.stdout, status.stdout
    assert f"collector:{jsonl}" in status.stdout, status.stdout  # the host that has the file

    # `resume` on a host without the file sends nothing and resets nothing.
    resumed = workers[0].run("resume", campaign, env={"COLUMNS": "300"})
    assert resumed.returncode == 0, resumed.stderr
    assert f"0 of {CASES} jobs sent again" in resumed.stderr, resumed.stderr
    assert f"collector:{jsonl}" in resumed.stderr, resumed.stderr
    again = submitter.run("status", campaign, env={"COLUMNS": "300"})
    assert f"{CASES}/{CASES}" in again.stdout, again.stdout

    rows = read_jsonl(jsonl)
    ids = [row["job_id"] for row in rows]
    assert len(ids) == len(set(ids)) == CASES
    assert {row["status"] for row in rows} == {"ok"}
    assert {str(row["worker"]) for row in rows} <= {f"celery@{w.name}" for w in workers}
    attached = [row for row in rows if str(row["case_id"]).startswith("att-")]
    assert len(attached) == ATTACHING
    for row in attached:  # the workers cannot read the file: its text came through Redis
        request = row["raw_request"]
        assert isinstance(request, dict) and NOTE.strip() in request["question"]
    assert not submitted_out.exists() or not list(submitted_out.iterdir())

    # Each host sees only its own files, and has its own name.
    assert (submitter.work / "project" / "evals.yaml").exists()
    for worker in workers:
        listing = worker.exec("ls", "-A", str(submitter.folder))
        assert listing.returncode == 0 and listing.stdout == "", listing
        assert worker.exec("ls", str(worker.folder)).stdout.split() == ["home", "logs", "work"]
    names = {host.name: host.exec("hostname").stdout.strip() for host in fleet.hosts.values()}
    assert names == {name: name for name in fleet.hosts}

    # The root namespace has no way onto the test network.
    with pytest.raises(OSError):
        socket.create_connection((redis.host.ip, 6379), timeout=2).close()
    root_addresses = subprocess.run(["ip", "-o", "addr"], capture_output=True, text=True)
    assert "10.213." not in root_addresses.stdout

    # A cut host reaches nobody and nobody reaches it; healed, it reaches Redis again.
    cut = workers[1]
    fleet.cut(cut)
    seen: dict[str, tuple[str, float]] = {}

    def probe(key: str, host: Host, ip: str) -> None:
        seen[key] = host.probe(ip, 6379, seconds=10)

    probes = [
        threading.Thread(target=probe, args=("from cut", cut, redis.host.ip)),
        threading.Thread(target=probe, args=("to cut", workers[0], cut.ip)),
        threading.Thread(target=probe, args=("others", workers[0], redis.host.ip)),
    ]
    for thread in probes:
        thread.start()
    for thread in probes:
        thread.join()
    assert seen["from cut"][0] != "connected" and seen["to cut"][0] != "connected", seen
    assert seen["others"][0] == "connected", seen
    fleet.heal(cut)
    assert cut.probe(redis.host.ip, 6379, seconds=10)[0] == "connected"

    for process in fleet.processes():
        assert process.alive(), f"{process.host.name}/{process.name} exited: {process.log()}"
        assert "Traceback" not in process.log(), f"{process.host.name}/{process.name}"

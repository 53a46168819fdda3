"""What a campaign pays for, counted at the vendor: a loopback OpenAI-compatible endpoint on
a host of its own logs every call (tests/fleet/vendor.py), so each test asserts the number
of target calls per job besides one line per job in the results file."""

from __future__ import annotations

import re
import shutil
import signal
import sys
import time
from collections import Counter
from pathlib import Path

import pytest

from evalrelay.bridge.keys import (
    compacted_key,
    holders_key,
    paid_again_key,
    results_stream_key,
    target_tally_key,
)
from tests.conftest import one_turn_cases, wait_for
from tests.fleet.netns import Fleet, Host, HostProcess, RedisServer
from tests.fleet.test_fleet_faults import assert_once_each, leased_by, line_count
from tests.fleet.vendor import calls

pytestmark = pytest.mark.fleet

PORT = 8080
TARGET = "paid"
QUESTION = re.compile(r"[a-z]+-q\d+")


class Vendor:
    """The endpoint's host; `calls()` says how often each question was asked."""

    def __init__(self, fleet: Fleet) -> None:
        self.host = fleet.add_host("vendor")
        self.log = self.host.folder / "calls.log"

    def start(self, delay: float) -> None:
        script = str(Path(__file__).with_name("vendor.py"))
        argv = [sys.executable, script, self.host.ip, str(PORT), str(delay), str(self.log)]
        self.host.spawn(argv, name="vendor")
        wait_for(lambda: self.host.probe(self.host.ip, PORT, 1)[0] == "connected", 30, "the vendor")

    def calls(self) -> Counter[str]:
        """Calls by question (`<name>-q<i>`), whatever the target added around it."""
        return Counter({QUESTION.search(q)[0]: n for q, n in calls(self.log).items()})  # type: ignore[index]

    def project(self, host: Host, cases: int, name: str) -> str:
        """An eval project on `host` whose target is this endpoint; each case's question is
        `<name>-q<i>`. Returns the eval file's path."""
        folder = host.work / "project"
        folder.mkdir(parents=True, exist_ok=True)
        (folder / "targets.yaml").write_text(
            f"targets:\n  - {{name: {TARGET}, provider: openai-compatible, model: m, "
            f'base_url: "http://{self.host.ip}:{PORT}/v1", max_retries: 0}}\n'
        )
        cases_text = one_turn_cases(cases, case_id=f"{name}-{{i}}", question=f"{name}-q{{i}}")
        (folder / f"{name}.yaml").write_text(cases_text)
        return f"project/{name}.yaml"


def detach(host: Host, path: str, out: Path) -> str:
    submitted = host.run("run", path, "--detach", "--target", TARGET, "--out", str(out))
    assert submitted.returncode == 0, submitted.stderr
    return submitted.stdout.strip()


def held_by(redis: RedisServer, name: str) -> set[str]:
    """The jobs whose messages the worker `worker --name NAME` holds (a holder's record is
    `<message id> <worker>/<host>/<pid>/<nonce>`)."""
    lines = redis.cli("HGETALL", holders_key()).splitlines()
    owners = {name, f"celery@{name}"}
    return {
        job for job, held in zip(lines[::2], lines[1::2], strict=True)
        if held.partition(" ")[2].split("/")[0] in owners
    }  # fmt: skip


def question_of(job_id: str, path: Path) -> str:
    """The question of a job, from its line in the results file."""
    from tests.conftest import read_jsonl

    for row in read_jsonl(path):
        if row["job_id"] == job_id:
            return QUESTION.search(str(row["raw_request"]))[0]  # type: ignore[index]
    raise AssertionError(f"job {job_id} has no line in {path}")


def dropped_late(process: HostProcess, job_id: str) -> bool:
    """Whether the worker logged the job's copy dropped as late (at lease begin, at
    publication, or as no longer stored)."""
    said = " ".join(process.log().split())
    return re.search(
        rf"job {job_id}: (late-copy|\w+ \(late copy\)|no longer stored)", said
    ) is not None  # fmt: skip


def test_a_stopped_workers_copies_call_no_target_after_compaction(fleet: Fleet) -> None:
    """Worker-2 is SIGSTOPped holding batches (two jobs running, the others waiting for
    its two slots) past its lease; worker-1 runs every job, the campaign completes and is
    compacted; then worker-2 is let go on. Its copies are late: the waiting ones are
    dropped before calling the endpoint, the running ones at publication; nothing reaches
    the compacted campaign's stream, and the target's tally counts each job once."""
    redis = fleet.add_redis()
    vendor = Vendor(fleet)
    first, second = fleet.add_host("worker-1"), fleet.add_host("worker-2")
    submitter, collector = fleet.add_host("submitter"), fleet.add_host("collector")
    redis.start()
    vendor.start(delay=2.0)
    workers = [
        first.start("-v", "worker", "--name", "worker-1", "-c", "16", name="worker"),
        second.start("-v", "worker", "--name", "worker-2", "-c", "2", name="worker"),
    ]
    out = collector.folder / "results"
    collector.start("collect", "--out", str(out), name="collect")
    for host in (first, second):
        fleet.wait_for_worker(host.name)

    cases = 192  # three jobs a message (`batch_size`): worker-2 holds more than it runs
    campaign = detach(submitter, vendor.project(submitter, cases, "late"), out)
    wait_for(lambda: leased_by(redis, "worker-2"), 60, "worker-2 running jobs")
    time.sleep(0.5)  # their calls under way: the endpoint answers each after 2 s
    workers[1].signal(signal.SIGSTOP)
    held, running = held_by(redis, "worker-2"), leased_by(redis, "worker-2")
    assert running and held - running, (held, running)  # waiting for one of its 2 slots
    path = out / f"{campaign}.jsonl"
    wait_for(lambda: line_count(path) == cases, 120, "worker-1 to run every job")
    wait_for(lambda: redis.cli("EXISTS", compacted_key(campaign)).strip() == "1", 60, "compaction")
    paid_before = vendor.calls()
    workers[1].signal(signal.SIGCONT)
    wait_for(
        lambda: all(dropped_late(workers[1], job) for job in held),
        60,
        f"worker-2 to drop its {len(held)} late copies",
    )
    time.sleep(2)  # a call made now would be logged by the endpoint within this
    paid = vendor.calls()
    assert_once_each(path, cases)
    assert len(paid) == cases and all(n >= 1 for n in paid.values())
    log = " ".join(workers[1].log().split())
    leased = {job for job in held if re.search(rf"job {job}: \w+ \(late copy\)", log)}
    fenced = {question_of(job, path) for job in held - leased}
    mid_call = {question_of(job, path) for job in leased}
    assert fenced, "every copy worker-2 held was past its lease's begin: nothing fenced there"
    after = set(paid - paid_before)
    assert not after & fenced, f"copies dropped at lease begin called the target: {after & fenced}"
    # A job whose call was admitted before the stop may send it after; its result is
    # dropped at publication. One still waiting for a slot meets the compacted mark at its
    # call's admission and is dropped without a call.
    assert after <= mid_call, after
    twice = {q for q, n in paid.items() if n > 1}
    assert twice <= mid_call, twice
    # A line an element, as a why may hold a space (`late copy`); an empty hash is one
    # empty line.
    counted = [line for line in redis.cli("HGETALL", paid_again_key(campaign)).splitlines() if line]
    paid_again = dict(zip(counted[::2], map(int, counted[1::2]), strict=True))
    assert sum(paid_again.values()) == sum(paid.values()) - cases, paid_again
    assert redis.cli("XLEN", results_stream_key(campaign)).strip() == "0"
    assert redis.cli("HGET", target_tally_key(TARGET), "ok").strip() == str(cases)
    assert not any(re.search(rf"job {job}: \w+ \(published\)", log) for job in held)
    print(
        f"\nworker SIGSTOPped past its lease, campaign compacted, SIGCONT: {cases} jobs, "
        f"{len(held)} held by the stopped worker ({len(leased)} past their lease's begin); "
        f"{sum(paid.values()) - cases} calls beyond one per job, {len(after)} after the "
        f"SIGCONT (none of the {len(fenced)} dropped at lease begin)"
    )


def test_a_redis_killed_under_running_jobs_costs_no_call_twice(fleet: Fleet) -> None:
    """Redis (append-only file) is SIGKILLed for 25 s while two workers' jobs wait on the
    endpoint: three times the workers' liveness window and lease (8 s here: a worker's first
    call imports the vendor's SDK, which can starve a 3 s lease's renewals on a loaded
    machine), so every `alive` key and lease has run out when it comes back. The workers
    renew them before any reaper judges: no job is sent again, none is called twice."""
    redis = fleet.add_redis()
    vendor = Vendor(fleet)
    hosts = [fleet.add_host("worker-1"), fleet.add_host("worker-2")]
    submitter, collector = fleet.add_host("submitter"), fleet.add_host("collector")
    redis.start()
    vendor.start(delay=3.0)
    window = {"EVALRELAY_ALIVE_SECONDS": "8", "EVALRELAY_LEASE_SECONDS": "8"}
    workers = [
        h.start("-v", "worker", "--name", h.name, "-c", "8", name="worker", env=window)
        for h in hosts
    ]
    out = collector.folder / "results"
    collect = collector.start("collect", "--out", str(out), name="collect")
    for host in hosts:
        fleet.wait_for_worker(host.name)

    cases = 160
    campaign = detach(submitter, vendor.project(submitter, cases, "outage"), out)
    path = out / f"{campaign}.jsonl"
    wait_for(lambda: line_count(path) >= 16, 60, "results flowing")
    wait_for(lambda: leased_by(redis, "worker-1") and leased_by(redis, "worker-2"), 30, "jobs")
    redis.kill()
    killed = time.monotonic()
    time.sleep(25)
    redis.start()
    back = time.monotonic()
    wait_for(lambda: line_count(path) == cases, 240, "every job's line")
    finished = time.monotonic() - back
    assert_once_each(path, cases)
    paid = vendor.calls()
    twice = sorted(q for q, n in paid.items() if n > 1)
    assert len(paid) == cases and not twice, f"called twice: {twice}"
    logs = " ".join(w.log() for w in workers)
    assert "sending it again" not in logs, "a reaper sent a running job again"
    assert "Redis is back" in logs
    assert redis.cli("HLEN", paid_again_key(campaign)).strip() == "0"
    # The broker's record of the messages the workers took while Redis went away: their
    # jobs done, the sweep of a reaper drops what no live worker holds.
    wait_for(lambda: redis.cli("HLEN", "unacked").strip() == "0", 60, "`unacked` to empty")
    assert collect.alive() and all(w.alive() for w in workers)
    print(
        f"\nRedis SIGKILLed {back - killed:.0f} s under running jobs: {cases} jobs, one line "
        f"and one call each; done {finished:.0f} s after Redis came back"
    )


def test_a_campaign_lost_with_an_empty_redis_recovers_with_the_command_status_prints(
    fleet: Fleet,
) -> None:
    """A detached campaign's eval files are on the submitter, its results on the collector's
    host. Redis restarts empty mid-campaign: the collector, which cannot plan the jobs,
    makes the campaign known again with the results it kept; `status` on the submitter says
    what to run there, and that command sends only the jobs without a line."""
    redis = fleet.add_redis()
    vendor = Vendor(fleet)
    worker = fleet.add_host("worker")
    submitter, collector = fleet.add_host("submitter"), fleet.add_host("collector")
    redis.start()
    vendor.start(delay=0.5)
    runner = worker.start("-v", "worker", "--name", "worker", "-c", "8", name="worker")
    out = collector.folder / "results"
    collect = collector.start("collect", "--out", str(out), name="collect")
    fleet.wait_for_worker("worker")

    cases = 120
    campaign = detach(submitter, vendor.project(submitter, cases, "lost"), out)
    path = out / f"{campaign}.jsonl"
    wait_for(lambda: line_count(path) >= 40, 60, "a third of the results")
    redis.kill()
    shutil.rmtree(redis.data)  # restarted empty: no append-only file left
    redis.start()
    kept = line_count(path)
    fleet.wait_for_worker("worker")

    def told() -> str:
        said = submitter.run("status", env={"COLUMNS": "400"}).stdout
        return said if f"evalrelay resume {campaign}" in said else ""

    wait_for(told, 60, "status on the submitter to say what to run")
    command = re.search(rf"`evalrelay resume {campaign}` in (\S+),", " ".join(told().split()))
    assert command is not None, told()
    assert command[1] == str(submitter.work), command[1]
    resumed = submitter.run("resume", campaign, timeout=240)
    assert resumed.returncode == 0, resumed.stdout + resumed.stderr
    wait_for(lambda: line_count(path) == cases, 120, "every job's line on the collector's host")
    assert_once_each(path, cases)
    paid = vendor.calls()
    twice = sorted(q for q, n in paid.items() if n > 1)
    assert len(paid) == cases and len(twice) <= 8, twice  # at most those running at the loss
    assert collect.alive() and runner.alive()
    print(
        f"\nRedis restarted empty mid-campaign ({kept} of {cases} lines kept on the collector's "
        f"host): `status` on the submitter named the command; `resume` there sent the rest; "
        f"{len(twice)} jobs called twice (8 were running at the loss)"
    )

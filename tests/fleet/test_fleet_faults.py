"""Faults across hosts: links cut mid-handoff and mid-job, a collector partitioned while a
second takes over, Redis stopped and killed, a submitter killed mid-submit. Each ends with
every job exactly one line, without `resume`, within a stated time; each prints what it
measured (docs/guarantees.md quotes these lines)."""

from __future__ import annotations

import re
import signal
import subprocess
import time
from collections import Counter
from pathlib import Path

import pytest

from evalrelay.bridge.keys import inflight_key, lease_key, listed_key, paid_again_key
from tests.conftest import one_turn_cases, read_jsonl, wait_for
from tests.fleet.netns import Fleet, Host, HostProcess, RedisServer

pytestmark = pytest.mark.fleet


def targets(latency_ms: int) -> str:
    return f"targets:\n  - {{name: mock, provider: mock, latency_ms: {latency_ms}}}\n"


def project(host: Host, cases: int, latency_ms: int, name: str = "evals") -> str:
    """An eval project on `host` with `cases` one-turn cases; returns the file's path."""
    folder = host.work / "project"
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "targets.yaml").write_text(targets(latency_ms))
    (folder / f"{name}.yaml").write_text(one_turn_cases(cases, case_id=f"{name}-{{i}}"))
    return f"project/{name}.yaml"


def detach(host: Host, path: str, out: Path) -> str:
    submitted = host.run("run", path, "--detach", "--target", "mock", "--out", str(out))
    assert submitted.returncode == 0, submitted.stderr
    return submitted.stdout.strip()


def line_count(path: Path) -> int:
    return len(path.read_text().splitlines()) if path.exists() else 0


def assert_once_each(path: Path, count: int) -> list[dict[str, object]]:
    rows = read_jsonl(path)
    ids = Counter(str(row["job_id"]) for row in rows)
    doubled = [job for job, n in ids.items() if n > 1]
    assert not doubled, f"{path.name}: {len(doubled)} jobs with two lines"
    assert len(ids) == count, f"{path.name}: {len(ids)} of {count} jobs"
    return rows


def no_tracebacks(*processes: HostProcess) -> None:
    for process in processes:
        assert "Traceback" not in process.log(), f"{process.host.name}/{process.name}"


def ran_twice(*workers: HostProcess) -> int:
    """Jobs a worker ran to the end and found published already, or their campaign complete
    (paid twice); the workers log each job's end at `-v`."""
    return sum(w.log().count("(already published)") + w.log().count("(late copy)") for w in workers)


def paid_again_of(redis: RedisServer, campaign: str) -> int:
    """The campaign's target calls past one per job, as the workers counted them."""
    counted = redis.cli("HGETALL", paid_again_key(campaign)).splitlines()
    return sum(int(n) for n in counted[1::2])


def exit_code(process: HostProcess, seconds: float, *workers: HostProcess) -> int:
    """The process's exit code; when it has not exited within `seconds`, a failure that
    quotes its log and each worker's, after asking the workers for their threads' stacks
    (Celery logs them on SIGUSR1): what a stall waits on is then in the report."""
    try:
        return process.popen.wait(timeout=seconds)
    except subprocess.TimeoutExpired:
        for worker in workers:
            worker.signal(signal.SIGUSR1)
        time.sleep(2)
        logs = "\n".join(
            f"--- {p.host.name}/{p.name}:\n{p.log()[-20000:]}" for p in (process, *workers)
        )
        pytest.fail(f"{process.name} still running after {seconds:.0f} s\n{logs}")


class Cluster:
    """Redis, one worker, a submitter and a collector writing into `out`, all started."""

    def __init__(self, fleet: Fleet, concurrency: int) -> None:
        self.redis = fleet.add_redis()
        worker = fleet.add_host("worker")
        self.submitter, collector = fleet.add_host("submitter"), fleet.add_host("collector")
        self.redis.start()
        self.worker = worker.start(
            "-v", "worker", "--name", "worker", "-c", str(concurrency), name="worker"
        )
        self.out = collector.folder / "results"
        self.collect = collector.start("collect", "--out", str(self.out), name="collect")
        fleet.wait_for_worker("worker")

    def parts(self) -> tuple[RedisServer, Host, HostProcess, HostProcess, Path]:
        return self.redis, self.submitter, self.worker, self.collect, self.out


def leased_by(redis: RedisServer, name: str) -> set[str]:
    """The jobs whose lease the worker `worker --name NAME` holds now (a lease's token is
    `<Celery's hostname>:<uuid>`; the hostname of a name without "@" is `celery@NAME`)."""
    running = redis.cli("ZRANGE", inflight_key(), "0", "-1").split()
    owners = {name, f"celery@{name}"}
    return {j for j in running if redis.cli("GET", lease_key(j)).rsplit(":", 1)[0] in owners}


def ended(process: HostProcess, job_id: str) -> bool:
    """Whether a worker logged the end of the job (at `-v`), published by it or not (found
    published, or its campaign complete by then: a late copy)."""
    said = " ".join(process.log().split())  # rich wraps long lines
    ends = r"\w+ \((already published|published|late copy)\)"
    return re.search(rf"job {job_id}: {ends}", said) is not None


def test_worker_cut_mid_handoff_and_mid_job_loses_and_doubles_nothing(fleet: Fleet) -> None:
    """Worker-2 is cut while it runs jobs, and a second campaign is queued in the same
    instant, while its blocking pop may be taking a message it will never receive. Its
    running jobs' leases run out and worker-1 runs them; a message popped for it is found
    held by no one and sent again: both campaigns finish while worker-2 is still cut.
    Back, it finishes the jobs it was running and finds them published (or their campaign
    complete: late copies, dropped)."""
    redis = fleet.add_redis()
    first, second = fleet.add_host("worker-1"), fleet.add_host("worker-2")
    submitter, collector = fleet.add_host("submitter"), fleet.add_host("collector")
    redis.start()
    workers = [
        h.start("-v", "worker", "--name", h.name, "-c", "4", name="worker") for h in (first, second)
    ]
    out = collector.folder / "results"
    collect = collector.start("collect", "--out", str(out), name="collect")
    for host in (first, second):
        fleet.wait_for_worker(host.name)

    running = detach(submitter, project(submitter, 80, 500, "running"), out)
    waiting_file = project(submitter, 40, 200, "handoff")
    wait_for(lambda: line_count(out / f"{running}.jsonl") >= 8, 60, "jobs under way")
    # Cut while worker-2 runs jobs (worker-1 may take a batch or two of them all first).
    wait_for(lambda: leased_by(redis, "worker-2"), 60, "worker-2 running jobs")
    fleet.cut(second)
    # Redis keeps the cut worker's connection, so its blocking pop may still take a message.
    cut_mid_job = leased_by(redis, "worker-2")
    assert cut_mid_job, "worker-2 was running no job when it was cut"
    handoff = detach(submitter, waiting_file, out)
    cut_at = time.monotonic()
    wait_for(
        lambda: (
            line_count(out / f"{running}.jsonl") == 80
            and line_count(out / f"{handoff}.jsonl") == 40
        ),
        120,
        "both campaigns, worker-2 cut",
    )
    finished = time.monotonic() - cut_at
    fleet.heal(second)
    # The cut worker's own publishes, waiting since the cut, land now: found done.
    wait_for(
        lambda: all(ended(workers[1], j) for j in cut_mid_job),
        120,
        f"worker-2 to end the {len(cut_mid_job)} jobs it was running when cut",
    )
    assert_once_each(out / f"{running}.jsonl", 80)
    assert_once_each(out / f"{handoff}.jsonl", 40)
    # What the cut costs: the jobs it was running, run again by the other worker.
    paid_again = sum(paid_again_of(redis, c) for c in (running, handoff))
    assert paid_again <= len(cut_mid_job), (paid_again, len(cut_mid_job))
    assert all(w.alive() for w in workers) and collect.alive()
    no_tracebacks(collect)
    print(
        f"\nworker cut mid-job and mid-handoff: 120 jobs, 0 lost, 0 doubled lines; all done "
        f"{finished:.0f} s after the cut, the worker still cut; {ran_twice(*workers)} jobs ran "
        f"twice ({len(cut_mid_job)} running on the cut worker); {paid_again} calls paid again"
    )


def test_collector_partitioned_while_a_second_takes_over(fleet: Fleet) -> None:
    """Two collectors on two hosts. The one writing is cut off: the other takes the
    campaign over, copies into its own file what the first wrote, and finishes it. The
    first, back, renames the part it wrote `.partial-<host>.jsonl` and reports nothing."""
    redis = fleet.add_redis()
    worker = fleet.add_host("worker")
    submitter = fleet.add_host("submitter")
    hosts = [fleet.add_host("collector-1"), fleet.add_host("collector-2")]
    redis.start()
    runner = worker.start("-v", "worker", "--name", "worker", "-c", "8", name="worker")
    fleet.wait_for_worker("worker")
    outs = [host.folder / "results" for host in hosts]
    # A collector's lease of 6 s, not 30: the takeover is the same, five times sooner.
    lease = {"EVALRELAY_COLLECTOR_LEASE_SECONDS": "6"}
    collects = [hosts[0].start("collect", "--out", str(outs[0]), name="collect", env=lease)]
    campaign = detach(submitter, project(submitter, 300, 200), outs[0])
    wait_for(lambda: line_count(outs[0] / f"{campaign}.jsonl") >= 20, 60, "the first lines")
    collects.append(hosts[1].start("collect", "--out", str(outs[1]), name="collect", env=lease))
    fleet.cut(hosts[0])
    cut_at = time.monotonic()
    taken = outs[1] / f"{campaign}.jsonl"
    wait_for(lambda: line_count(taken) > 0, 60, "the second collector to take over")
    took_over = time.monotonic() - cut_at
    wait_for(lambda: line_count(taken) == 300, 120, "the whole campaign on the second host")
    finished = time.monotonic() - cut_at
    fleet.heal(hosts[0])
    # The first comes back, finds the campaign taken, and marks the part it wrote.
    marked = outs[0] / f"{campaign}.partial-collector-1.jsonl"
    wait_for(marked.exists, 60, "the first collector to mark its file partial")
    assert not (outs[0] / f"{campaign}.jsonl").exists()
    assert not (outs[0] / f"{campaign}.html").exists()  # no report of a partial file
    assert 0 < line_count(marked) < 300
    assert_once_each(taken, 300)
    assert line_count(taken) == 300
    status = submitter.run("status", campaign, env={"COLUMNS": "300"})
    assert "300/300" in status.stdout and f"collector-2:{taken}" in status.stdout, status.stdout
    assert all(c.alive() for c in collects) and runner.alive()
    no_tracebacks(*collects)
    print(
        f"\ncollector cut, second collector on another host: 300 jobs, one line each in "
        f"the second host's file; took over {took_over:.0f} s after the cut, "
        f"finished {finished:.0f} s after it"
    )


def test_redis_stopped_then_killed_run_and_collect_ride_it_out(fleet: Fleet) -> None:
    """Redis (append-only file) is stopped for 10 s, then killed for 20 s, while a `run`
    collects its own campaign and a `collect` service writes a detached one: each outage
    lasts several times the workers' liveness window and lease (5 s and 3 s here) and the
    5 s cap of the clients' backoff, so every client meets Redis gone past its retries."""
    redis, submitter, runner, collect, out = Cluster(fleet, concurrency=8).parts()
    detached = detach(submitter, project(submitter, 200, 300, "detached"), out)
    own_out = submitter.folder / "results"
    foreground = submitter.start(
        "run", project(submitter, 200, 300, "foreground"), "--target", "mock",
        "--out", str(own_out), name="run",
    )  # fmt: skip

    def own_lines() -> int:
        return sum(line_count(p) for p in own_out.glob("*.jsonl") if ".attempts." not in p.name)

    wait_for(lambda: line_count(out / f"{detached}.jsonl") >= 10, 60, "results flowing")
    wait_for(lambda: own_lines() >= 10, 60, "the run collecting its own")
    started = time.monotonic()
    # The faults themselves, not waits for an event: Redis stopped 10 s, up 3 s, killed 20 s.
    redis.stop()
    time.sleep(10)
    redis.start()
    time.sleep(3)
    redis.kill()
    time.sleep(20)
    redis.start()
    back = time.monotonic()
    assert exit_code(foreground, 180, runner) in (0, 1), foreground.log()
    wait_for(lambda: line_count(out / f"{detached}.jsonl") == 200, 120, "the detached one")
    finished = time.monotonic() - back
    (own,) = [p for p in own_out.glob("*.jsonl") if ".attempts." not in p.name]
    assert_once_each(own, 200)
    assert_once_each(out / f"{detached}.jsonl", 200)
    assert collect.alive() and runner.alive()
    assert "Redis is out of reach" in foreground.log()
    no_tracebacks(collect, foreground)
    print(
        f"\nRedis stopped 10 s, then killed 20 s: 400 jobs, one line each; `run` and "
        f"`collect` rode it out; done {finished:.0f} s after Redis came back "
        f"({back - started:.0f} s of faults); {ran_twice(runner)} jobs ran twice"
    )


def test_submitter_killed_mid_submit_leaves_a_whole_campaign_or_none(fleet: Fleet) -> None:
    """The submitter of 2,000 jobs is SIGKILLed the moment its campaign is announced, while
    its jobs go out in batches: the campaign finishes without `resume`, every job once."""
    redis, submitter, runner, collect, out = Cluster(fleet, concurrency=16).parts()
    path = project(submitter, 2000, 0)
    submit = submitter.start("run", path, "--detach", "--target", "mock", "--out", str(out),
                             name="submit")  # fmt: skip
    # Wait for the announce on the Redis host itself (the root namespace cannot reach it).
    announced = subprocess.run(
        redis.host.command(
            ["sh", "-c", "until [ \"$(redis-cli zcard evalrelay:campaigns)\" = 1 ]; do :; done"]
        ),
        timeout=120,
    )  # fmt: skip
    submit.kill()
    assert announced.returncode == 0
    campaign = redis.cli("zrange", "evalrelay:campaigns", "0", "-1").strip()
    queued_at_kill = int(redis.cli("llen", "api").strip())
    assert int(redis.cli("get", listed_key(campaign))) == 2000  # every job stored and listed
    assert queued_at_kill < 2000  # killed mid-submit: not every message had gone out
    killed_at = time.monotonic()
    wait_for(lambda: line_count(out / f"{campaign}.jsonl") == 2000, 240, "every job's line")
    finished = time.monotonic() - killed_at
    assert_once_each(out / f"{campaign}.jsonl", 2000)
    assert collect.alive() and runner.alive()
    print(
        f"\nsubmitter killed as its 2,000-job campaign was announced ({queued_at_kill} "
        f"messages queued by then): every job one line, no resume, {finished:.0f} s after the kill"
    )

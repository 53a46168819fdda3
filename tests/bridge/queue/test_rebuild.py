"""A Redis that restarts without its data mid-campaign: `run` rebuilds its campaign from the
eval files and its results file and finishes it, `status` and `resume` say what happened
and rebuild a campaign whose `run` is gone; every job ends with exactly one line."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import NamedTuple

import pytest
import redis

from evalrelay.bridge.contract.job import job_id
from evalrelay.bridge.errors import EvalrelayError
from evalrelay.bridge.keys import campaign_key
from evalrelay.bridge.queue.campaigns import CampaignInfo, Plan, load_info, progress
from evalrelay.bridge.queue.celery_queue import JobQueue
from evalrelay.bridge.queue.rebuild import (
    DroppedFile,
    find_record,
    lost_campaigns,
    read_record,
    rebuild,
    record_path,
    replan,
    write_record,
)
from evalrelay.bridge.queue.rebuilt_apart import (
    eval_files_here,
    needs_jobs,
    restore_from_results,
    send_planned,
)
from evalrelay.bridge.results.result import Status
from evalrelay.worker.execute import never_started
from tests.conftest import (
    PrivateRedis,
    WriteFiles,
    direct_job,
    one_turn_cases,
    read_jsonl,
    restart_empty,
    wait_for,
)

JOBS = 120
TARGETS = "targets:\n  - {name: slow, provider: mock, latency_ms: 150}\n"


def env_for(server: PrivateRedis, private_home: Path) -> dict[str, str]:
    return {
        **os.environ,
        "EVALRELAY_REDIS_URL": server.url,
        "EVALRELAY_HOME": str(private_home),
        "PYTHONUNBUFFERED": "1",
        "EVALRELAY_LEASE_SECONDS": "3",
        "EVALRELAY_REAP_SECONDS": "0.5",
        "EVALRELAY_ALIVE_SECONDS": "5",
    }


def evalrelay(
    args: list[str], env: dict[str, str], cwd: Path, log: Path
) -> subprocess.Popen[bytes]:
    return subprocess.Popen(
        [sys.executable, "-m", "evalrelay", *args],
        env=env, cwd=cwd, stdout=log.open("wb"), stderr=subprocess.STDOUT,
        stdin=subprocess.DEVNULL, start_new_session=True,
    )  # fmt: skip


def unwrapped(text: str) -> str:
    """Without white space: the terminal wraps long lines, paths included."""
    return "".join(text.split())


def lines_in(path: Path) -> int:
    return len(path.read_text().splitlines()) if path.exists() else 0


def one_line_per_job(path: Path) -> None:
    lines = read_jsonl(path)
    assert len(lines) == JOBS
    assert len({line["job_id"] for line in lines}) == JOBS
    assert {line["status"] for line in lines} == {"ok"}


class MidCampaign(NamedTuple):
    root: Path
    env: dict[str, str]
    run: subprocess.Popen[bytes]
    results: Path


@contextmanager
def mid_campaign(
    project: WriteFiles, server: PrivateRedis, private_home: Path, logs: Path
) -> Iterator[MidCampaign]:
    """A worker and a foreground `run` on `server`, once 30 of the results are on disk."""
    root = project({"targets.yaml": TARGETS, "evals.yaml": one_turn_cases(JOBS)})
    env = env_for(server, private_home)
    worker = evalrelay(["worker", "-c", "4"], env, root, logs / "worker.log")
    run = evalrelay(["run", "evals.yaml", "--target", "slow"], env, root, logs / "run.log")
    try:
        wait_for(lambda: list((root / "results").glob("*.jsonl")), 60, "the results file")
        (results,) = (root / "results").glob("*.jsonl")
        wait_for(lambda: lines_in(results) >= 30, 60, "30 results")
        yield MidCampaign(root, env, run, results)
    finally:
        for process in (worker, run):
            if process.poll() is None:
                os.killpg(process.pid, signal.SIGTERM)
                process.wait(20)


def test_run_rebuilds_its_campaign_when_redis_restarts_empty(
    project: WriteFiles, forgetful_redis: PrivateRedis, private_home: Path, tmp_path: Path
) -> None:
    with mid_campaign(project, forgetful_redis, private_home, tmp_path) as running:
        restart_empty(forgetful_redis)
        assert running.run.wait(120) == 0, (tmp_path / "run.log").read_text()
        worker_said = lambda: unwrapped((tmp_path / "worker.log").read_text())  # noqa: E731
        lost = unwrapped("Redis lost its data (it restarted empty, or evicted keys)")
        wait_for(lambda: lost in worker_said(), 30, "the worker to say Redis lost its data")
    said = unwrapped((tmp_path / "run.log").read_text())
    assert unwrapped("Redis lost its data (it restarted empty, or evicted keys") in said, said
    assert unwrapped(f"rebuilt from its eval files and {running.results}") in said
    one_line_per_job(running.results)


def test_status_and_resume_rebuild_a_campaign_whose_run_is_gone(
    project: WriteFiles, forgetful_redis: PrivateRedis, private_home: Path, tmp_path: Path
) -> None:
    with mid_campaign(project, forgetful_redis, private_home, tmp_path) as running:
        root, env, results = running.root, running.env, running.results
        os.killpg(running.run.pid, signal.SIGKILL)  # the run that collected it is gone
        running.run.wait(10)
        restart_empty(forgetful_redis)
        campaign = results.name.removesuffix(".jsonl")
        kept = lines_in(results)

        status = subprocess.run(
            [sys.executable, "-m", "evalrelay", "status"],
            env=env, cwd=root, capture_output=True, text=True, timeout=60,
        )  # fmt: skip
        said = unwrapped(status.stdout)
        assert unwrapped(f"campaign {campaign} ({kept} of {JOBS} results in") in said, said
        assert unwrapped(f"`evalrelay resume {campaign}` rebuilds it") in said

        resume = subprocess.run(
            [sys.executable, "-m", "evalrelay", "resume", campaign],
            env=env, cwd=root, capture_output=True, text=True, timeout=180,
        )  # fmt: skip
    said = unwrapped(resume.stderr)
    assert resume.returncode == 0, said
    assert unwrapped(f"campaign {campaign} was not in this Redis (it lost its data)") in said
    assert unwrapped(f"{kept} results kept, {JOBS - kept} jobs sent again") in said
    one_line_per_job(results)


def test_a_campaign_unknown_to_an_empty_redis_says_how_to_rebuild_it(
    forgetful_redis: PrivateRedis, private_home: Path, tmp_path: Path
) -> None:
    env = env_for(forgetful_redis, private_home)
    done = subprocess.run(
        [sys.executable, "-m", "evalrelay", "resume", "gone-20260101-000000-abcd"],
        env=env, cwd=tmp_path, capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    said = unwrapped(done.stderr)
    assert done.returncode != 0
    assert unwrapped("it is new, or it restarted without its data") in said, said
    assert unwrapped("evalrelay resume results/<campaign>.jsonl") in said


def test_a_record_is_found_by_id_by_results_file_or_by_its_own_path(tmp_path: Path) -> None:
    info = CampaignInfo(
        campaign_id="c-1", created_at="2026-01-01T00:00:00Z", sources=["e.yaml"],
        targets=["t"], total=3, out_dir=str(tmp_path / "results"), plan=Plan(repeats=2),
    )  # type: ignore[arg-type]  # fmt: skip
    path = write_record(info)
    assert path == record_path(tmp_path / "results", "c-1")
    assert read_record(path).info == info
    assert find_record("c-1", [tmp_path, tmp_path / "results"]) == path
    assert find_record(str(tmp_path / "results" / "c-1.jsonl"), []) == path
    assert find_record(str(path), []) == path
    assert find_record("c-2", [tmp_path / "results"]) is None


def test_resume_rebuilds_a_detached_campaign_from_the_record_its_collector_kept(
    project: WriteFiles, forgetful_redis: PrivateRedis, private_home: Path, tmp_path: Path
) -> None:
    """The `collect` service that kept its record is gone too (a running one rebuilds it
    by itself: tests/bridge/cli/test_collect.py): `resume` of its results file does."""
    root = project({"targets.yaml": TARGETS, "evals.yaml": one_turn_cases(JOBS)})
    env = env_for(forgetful_redis, private_home)
    out = tmp_path / "collected"
    worker = evalrelay(["worker", "-c", "4"], env, root, tmp_path / "worker.log")
    collect = evalrelay(["collect", "--out", str(out)], env, root, tmp_path / "collect.log")
    try:
        submitted = subprocess.run(
            [sys.executable, "-m", "evalrelay", "run", "evals.yaml", "--target", "slow",
             "--detach"],
            env=env, cwd=root, capture_output=True, text=True, timeout=60,
        )  # fmt: skip
        campaign = submitted.stdout.strip()
        results = out / f"{campaign}.jsonl"
        wait_for(lambda: lines_in(results) >= 30, 60, "30 results")
        assert record_path(out, campaign).is_file()  # kept by the collector
        os.killpg(collect.pid, signal.SIGKILL)
        collect.wait(10)
        restart_empty(forgetful_redis)
        resume = subprocess.run(
            [sys.executable, "-m", "evalrelay", "resume", str(results)],
            env=env, cwd=root, capture_output=True, text=True, timeout=180,
        )  # fmt: skip
    finally:
        for process in (worker, collect):
            if process.poll() is None:
                os.killpg(process.pid, signal.SIGTERM)
                process.wait(20)
    said = unwrapped(resume.stderr)
    assert resume.returncode == 0, said
    assert unwrapped(f"campaign {campaign} was not in this Redis (it lost its data)") in said
    one_line_per_job(results)


def test_a_campaign_is_rebuilt_once_however_many_processes_try(
    project: WriteFiles, client: redis.Redis, redis_url: str
) -> None:
    """Two watchers of one inbox, or a `collect` service and a `resume` by hand, may both
    find the campaign lost: the second finds it known again and sends nothing."""
    root = project({"evals.yaml": one_turn_cases(5)})
    info = CampaignInfo.for_jobs(
        "twice-20260101-000000-abcd",
        [],
        ["evals.yaml"],
        str(root / "results"),
        "run",
        plan=Plan(targets=["mock"], cwd=str(root)),
    ).model_copy(update={"total": 5})
    queue = JobQueue.connect(redis_url)
    done = {job_id(info.campaign_id, "evals", "c0", "mock", 0)}
    first = rebuild(client, queue, info, done, "first")
    assert first is not None and len(first) == 4
    assert rebuild(client, queue, info, set(), "second") is None
    assert client.llen("api") == 4
    rebuilt = load_info(client, info.campaign_id).rebuilt
    assert rebuilt is not None
    assert (rebuilt.by, rebuilt.kept, rebuilt.sent) == ("first", 1, 4)


def test_a_dropped_campaign_is_left_to_a_watcher_of_its_inbox(tmp_path: Path) -> None:
    """Its file is untrusted: only a watcher loads it again, as it loaded it first. `status`
    says so, and planning it as a `run` would (`resume`, `collect`) is refused."""
    inbox = tmp_path / "inbox"
    info = CampaignInfo(
        campaign_id="dropped-1", created_at="2026-01-01T00:00:00Z",
        sources=[str(inbox / "e.yaml")], targets=["t"], total=3,
        out_dir=str(tmp_path / "results"), collector="watch", plan=Plan(),
    )  # type: ignore[arg-type]  # fmt: skip
    dropped = DroppedFile(inbox=str(inbox), path="e.yaml", queued="queued/e.yaml", identity="x")
    write_record(info, dropped)
    (lost,) = lost_campaigns(tmp_path / "results", known=[])
    said = str(lost)
    assert f"A watcher of {inbox} rebuilds it from {inbox / 'queued' / 'e.yaml'}" in said
    assert f"start `evalrelay watch {inbox}` if none runs" in said
    assert "resume" not in said
    with pytest.raises(EvalrelayError, match="only a watcher of that inbox rebuilds it"):
        replan(info)


def test_a_campaign_is_rebuilt_apart_results_on_one_host_jobs_on_the_other(
    project: WriteFiles, client: redis.Redis, redis_url: str, tmp_path: Path
) -> None:
    """Where its results file is but not its eval files, the campaign is made known again
    with the results kept and marked as lacking its jobs; where its eval files are, the
    jobs without a line are planned again and sent, once."""
    root = project({"evals.yaml": one_turn_cases(5)})
    info = CampaignInfo.for_jobs(
        "apart-20260101-000000-abcd", [], ["evals.yaml"], str(tmp_path / "results"),
        "service", plan=Plan(targets=["mock"], cwd=str(tmp_path / "elsewhere")),
    ).model_copy(update={"total": 5})  # fmt: skip
    kept = [job_id(info.campaign_id, "evals", f"c{i}", "mock", 0) for i in (0, 1)]
    results = tmp_path / "results" / f"{info.campaign_id}.jsonl"
    results.parent.mkdir()
    lines = [
        never_started(direct_job(campaign_id=info.campaign_id, job_id=j), "w", Status.OK, "", 0)
        for j in kept
    ]
    results.write_text("".join(r.model_dump_json() + "\n" for r in lines))
    assert not eval_files_here(info)
    assert restore_from_results(client, info, results, "collect@results-host") == 2
    assert restore_from_results(client, info, results, "again") is None
    state = progress(client, info.campaign_id)
    assert (state.done, state.total, state.known) == (2, 5, True)
    assert needs_jobs(client, info.campaign_id)
    assert client.llen("api") == 0

    queue = JobQueue.connect(redis_url)
    # The host of its eval files: where the record's plan says they are.
    moved = Plan(targets=["mock"], cwd=str(root))
    here = load_info(client, info.campaign_id).model_copy(update={"plan": moved})
    client.set(campaign_key(info.campaign_id), here.model_dump_json())
    sent = send_planned(client, queue, info.campaign_id, "resume")
    assert sent is not None and sorted(j.job_id for j in sent) == sorted(
        job_id(info.campaign_id, "evals", f"c{i}", "mock", 0) for i in (2, 3, 4)
    )
    assert client.llen("api") == 3
    assert not needs_jobs(client, info.campaign_id)
    assert send_planned(client, queue, info.campaign_id, "resume") is None
    rebuilt = load_info(client, info.campaign_id).rebuilt
    assert rebuilt is not None and (rebuilt.kept, rebuilt.sent) == (2, 3)


def test_resume_of_a_results_file_moved_elsewhere_keeps_its_results_there(
    project: WriteFiles, forgetful_redis: PrivateRedis, private_home: Path, tmp_path: Path
) -> None:
    """The record names the folder it was written in; `resume PATH` of a copy in another
    folder keeps the copy's results (none of those jobs runs again) and writes there."""
    root = project({"targets.yaml": TARGETS, "evals.yaml": one_turn_cases(JOBS)})
    env = env_for(forgetful_redis, private_home)
    out = tmp_path / "collected"
    worker = evalrelay(["worker", "-c", "4"], env, root, tmp_path / "worker.log")
    collect = evalrelay(["collect", "--out", str(out)], env, root, tmp_path / "collect.log")
    try:
        submitted = subprocess.run(
            [sys.executable, "-m", "evalrelay", "run", "evals.yaml", "--target", "slow",
             "--detach"],
            env=env, cwd=root, capture_output=True, text=True, timeout=60,
        )  # fmt: skip
        campaign = submitted.stdout.strip()
        wait_for(lambda: lines_in(out / f"{campaign}.jsonl") >= 30, 60, "30 results")
        os.killpg(collect.pid, signal.SIGKILL)
        collect.wait(10)
        restart_empty(forgetful_redis)
        moved = tmp_path / "moved"
        moved.mkdir()
        for name in (f"{campaign}.jsonl", f"{campaign}.campaign.json"):
            (moved / name).write_bytes((out / name).read_bytes())
        kept = lines_in(moved / f"{campaign}.jsonl")
        resume = subprocess.run(
            [sys.executable, "-m", "evalrelay", "resume", str(moved / f"{campaign}.jsonl")],
            env=env, cwd=root, capture_output=True, text=True, timeout=180,
        )  # fmt: skip
    finally:
        for process in (worker, collect):
            if process.poll() is None:
                os.killpg(process.pid, signal.SIGTERM)
                process.wait(20)
    said = unwrapped(resume.stderr)
    assert resume.returncode == 0, said
    assert unwrapped(f"{kept} results kept, {JOBS - kept} jobs sent again") in said, said
    one_line_per_job(moved / f"{campaign}.jsonl")
    assert lines_in(out / f"{campaign}.jsonl") == kept  # the first folder's is left as it was

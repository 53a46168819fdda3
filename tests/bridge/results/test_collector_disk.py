"""A collector process whose disk fails (fills up, meets a file-size limit, fails an fsync)
stays up, says so in `evalrelay status`, keeps every result in Redis until its line is on
disk, and completes the file, every job once, once the disk takes lines again."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from collections import Counter
from collections.abc import Iterator
from pathlib import Path

import pytest
import redis

from evalrelay.bridge.keys import results_stream_key
from evalrelay.bridge.queue.campaigns import CampaignInfo
from tests.conftest import Processes, WriteFiles, one_turn_cases, wait_for
from tests.worker.test_tasks import submit_campaign

SLOW_TARGET = "targets:\n  - {name: slow, provider: mock, latency_ms: 200}\n"

FSYNC_FAILS = '''
"""os.fsync raises EIO while the file named by EVALRELAY_TEST_FSYNC_FAILS exists."""
import errno
import os

_fsync = os.fsync


def _failing_fsync(fd):
    if os.path.exists(os.environ["EVALRELAY_TEST_FSYNC_FAILS"]):
        raise OSError(errno.EIO, os.strerror(errno.EIO))
    return _fsync(fd)


os.fsync = _failing_fsync
'''


@pytest.fixture
def tiny_disk(tmp_path: Path) -> Iterator[Path]:
    """A 256 KiB tmpfs, unmounted after the test."""
    if os.geteuid() != 0:
        pytest.fail("the full-disk test mounts a tmpfs: run it as root")
    folder = tmp_path / "tiny"
    folder.mkdir()
    subprocess.run(["mount", "-t", "tmpfs", "-o", "size=256k", "tmpfs", str(folder)], check=True)
    try:
        yield folder
    finally:
        subprocess.run(["umount", "--lazy", str(folder)], check=False)


def campaign(
    project: WriteFiles, processes: Processes, client: redis.Redis, redis_url: str, jobs: int
) -> CampaignInfo:
    """A campaign of `jobs` slow mock jobs, run by two worker slots (about 10 a second)."""
    root = project({"targets.yaml": SLOW_TARGET, "evals.yaml": one_turn_cases(jobs)})
    processes.worker(client, "slow@test", "--concurrency", "2")
    return submit_campaign(redis_url, root, jobs)


def whole_lines(path: Path) -> list[dict[str, object]]:
    """The file's lines, each a JSON object; fails on a torn or unreadable line."""
    data = path.read_bytes() if path.exists() else b""
    assert not data or data.endswith(b"\n"), f"{path.name} ends with a torn line"
    return [json.loads(line) for line in data.splitlines()]


def assert_once_each(path: Path, jobs: int) -> None:
    ids = Counter(str(line["job_id"]) for line in whole_lines(path))
    assert [job for job, n in ids.items() if n > 1] == [], "jobs with two lines"
    assert len(ids) == jobs


def summary_results(out: Path, campaign_id: str) -> int | None:
    path = out / f"{campaign_id}.summary.json"
    return json.loads(path.read_text())["results"] if path.exists() else None


def status(redis_url: str) -> str:
    done = subprocess.run(
        [sys.executable, "-m", "evalrelay", "status"],
        env={**os.environ, "EVALRELAY_REDIS_URL": redis_url, "COLUMNS": "400"},
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    return done.stdout


def says_cannot_write(redis_url: str, path: Path, error: str) -> bool:
    shown = status(redis_url)
    return "cannot write " in shown and str(path) in shown and error in shown


def every_result_in_stream(client: redis.Redis, info: CampaignInfo) -> bool:
    return client.xlen(results_stream_key(info.campaign_id)) >= info.total


def test_a_full_disk_pauses_the_collector_until_space_returns(
    project: WriteFiles,
    processes: Processes,
    client: redis.Redis,
    redis_url: str,
    tiny_disk: Path,
) -> None:
    info = campaign(project, processes, client, redis_url, 120)
    path = tiny_disk / f"{info.campaign_id}.jsonl"
    collector = processes.start(
        "collect", "--campaign", info.campaign_id, "--out", str(tiny_disk), name="collector"
    )
    wait_for(lambda: len(whole_lines(path)) >= 10, 60, "the first lines")
    ballast = tiny_disk / "ballast"
    with ballast.open("wb", buffering=0) as handle:
        try:
            while True:
                handle.write(b"\0" * 4096)
        except OSError:
            pass  # the disk is full
    wait_for(
        lambda: says_cannot_write(redis_url, path, "No space left on device (ENOSPC)"),
        60,
        "status to say the collector cannot write",
    )
    wait_for(lambda: every_result_in_stream(client, info), 60, "every job's result")
    assert collector.poll() is None, processes.log("collector")
    assert len(whole_lines(path)) < info.total  # whole lines only, though the disk is full

    ballast.unlink()
    wait_for(lambda: len(whole_lines(path)) == info.total, 60, "the rest of the lines")
    assert_once_each(path, info.total)
    wait_for(lambda: summary_results(tiny_disk, info.campaign_id) == info.total, 30, "summary")
    wait_for(lambda: "cannot write" not in status(redis_url), 30, "status to stop saying so")
    assert collector.wait(30) == 0  # its one campaign complete, `collect --campaign` ends


def test_a_file_size_limit_met_mid_line_leaves_no_torn_line(
    project: WriteFiles, processes: Processes, client: redis.Redis, redis_url: str
) -> None:
    info = campaign(project, processes, client, redis_url, 60)
    out = Path(info.out_dir)
    path = out / f"{info.campaign_id}.jsonl"
    limited = processes.start("collect", "--campaign", info.campaign_id, name="limited")
    wait_for(lambda: len(whole_lines(path)) >= 5, 60, "the first lines")
    line = path.stat().st_size // len(whole_lines(path))
    limit = path.stat().st_size + line * 3 + line // 2  # met in the middle of a line
    subprocess.run(["prlimit", "--pid", str(limited.pid), f"--fsize={limit}"], check=True)
    wait_for(
        lambda: says_cannot_write(redis_url, path, "File too large (EFBIG)"),
        60,
        "status to say the collector cannot write",
    )
    wait_for(lambda: every_result_in_stream(client, info), 60, "every job's result")
    assert limited.poll() is None, processes.log("limited")
    lines = whole_lines(path)  # no torn line
    assert len(lines) < info.total and path.stat().st_size <= limit
    assert summary_results(out, info.campaign_id) == len(lines)

    os.killpg(limited.pid, signal.SIGTERM)
    assert limited.wait(30) == 0, processes.log("limited")
    processes.start("collect", "--campaign", info.campaign_id, name="unlimited")
    wait_for(lambda: len(whole_lines(path)) == info.total, 60, "the rest of the lines")
    assert_once_each(path, info.total)
    wait_for(lambda: summary_results(out, info.campaign_id) == info.total, 30, "the summary")


def test_a_failing_fsync_never_lets_results_leave_redis(
    project: WriteFiles,
    processes: Processes,
    client: redis.Redis,
    redis_url: str,
    tmp_path: Path,
) -> None:
    info = campaign(project, processes, client, redis_url, 60)
    out = Path(info.out_dir)
    path = out / f"{info.campaign_id}.jsonl"
    site = tmp_path / "site"
    site.mkdir()
    (site / "sitecustomize.py").write_text(FSYNC_FAILS)
    marker = tmp_path / "fsync-fails"
    collector = processes.start(
        "collect",
        "--campaign",
        info.campaign_id,
        name="collector",
        extra_env={"PYTHONPATH": str(site), "EVALRELAY_TEST_FSYNC_FAILS": str(marker)},
    )
    wait_for(lambda: len(whole_lines(path)) >= 5, 60, "the first lines")
    marker.touch()
    wait_for(
        lambda: says_cannot_write(redis_url, path, "Input/output error (EIO)"),
        60,
        "status to say the collector cannot write",
    )
    wait_for(lambda: every_result_in_stream(client, info), 60, "every job's result")
    assert collector.poll() is None, processes.log("collector")
    stream = results_stream_key(info.campaign_id)
    assert client.xlen(stream) >= info.total  # nothing trimmed
    on_disk = {str(line["job_id"]) for line in whole_lines(path)}
    collected = client.smembers(f"evalrelay:campaign:{info.campaign_id}:collected")
    assert collected <= on_disk and len(collected) < info.total

    marker.unlink()
    wait_for(lambda: len(whole_lines(path)) == info.total, 60, "the rest of the lines")
    assert_once_each(path, info.total)
    wait_for(lambda: client.xlen(stream) == 0, 30, "the stream emptied once the file is whole")
    assert summary_results(out, info.campaign_id) == info.total

"""`evalrelay status`: whole campaign ids at any width, the campaigns and workers that
matter now (the rest on `--all`), and the ones gone for good dropped."""

from __future__ import annotations

import json
import os
import re
import subprocess
import time
from pathlib import Path

import redis

from evalrelay.bridge.delivery.holders import GONE_SECONDS
from evalrelay.bridge.keys import (
    collected_key,
    paid_again_key,
    watchers_key,
    workers_key,
)
from evalrelay.bridge.results.manifest import list_jobs
from evalrelay.worker.app import WORKER_HEARTBEAT_SECONDS
from tests.bridge.cli.test_run import evalrelay
from tests.bridge.queue.test_campaigns import add_campaign
from tests.clocks import SKEW, skewed_clock
from tests.conftest import Processes

LONG_ID = "a-dataset-with-a-rather-long-descriptive-name-20260301-120000-ab12"


def status(
    redis_url: str, cwd: Path, *args: str, columns: int = 200
) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "EVALRELAY_REDIS_URL": redis_url, "COLUMNS": str(columns)}
    shown = evalrelay("status", *args, env=env, cwd=cwd)
    assert shown.returncode == 0, shown.stderr
    return shown


def test_status_hides_silent_workers_unless_all_and_drops_long_gone_ones(
    client: redis.Redis, redis_url: str, tmp_path: Path
) -> None:
    now = time.time()
    for key, prefix in ((workers_key(), "worker"), (watchers_key(), "watcher")):
        client.hset(key, f"{prefix}-live", json.dumps({"seen": now - 1, "queues": ["api"]}))
        client.hset(key, f"{prefix}-late", json.dumps({"seen": now - 60}))
        client.hset(key, f"{prefix}-killed", json.dumps({"seen": now - GONE_SECONDS - 1}))
    shown = status(redis_url, tmp_path).stdout
    assert "worker-live" in shown and "watcher-live" in shown
    assert "late" not in shown
    assert "1 workers not heard from in 30s not shown (--all lists them)" in shown
    assert "1 watchers not heard from in 30s not shown (--all lists them)" in shown
    everything = status(redis_url, tmp_path, "--all").stdout
    assert "worker-late" in everything and "(gone?)" in everything
    assert "killed" not in everything
    assert sorted(client.hkeys(workers_key())) == ["worker-late", "worker-live"]
    assert sorted(client.hkeys(watchers_key())) == ["watcher-late", "watcher-live"]


def test_status_prints_long_campaign_ids_whole_on_narrow_terminals(
    client: redis.Redis, redis_url: str, tmp_path: Path
) -> None:
    add_campaign(client, LONG_ID, total=3, out_dir=str(tmp_path / "some" / "results" / "folder"))
    for columns in (60, 80, 120):
        lines = status(redis_url, tmp_path, columns=columns).stdout.splitlines()
        assert any(LONG_ID in line for line in lines), f"{columns} columns:\n" + "\n".join(lines)
        detail = status(redis_url, tmp_path, "latest", columns=columns).stdout
        assert detail.splitlines()[0] == f"campaign {LONG_ID}"


def test_status_lists_unfinished_and_the_last_finished_campaigns_and_counts_the_rest(
    client: redis.Redis, redis_url: str, tmp_path: Path
) -> None:
    for i in range(8):
        add_campaign(client, f"finished-{i}", i, total=1, done=1)
    add_campaign(client, "unfinished-old", -100, total=2, done=1)
    shown = status(redis_url, tmp_path).stdout
    assert "unfinished-old" in shown
    assert [f"finished-{i}" in shown for i in range(8)] == [False] * 3 + [True] * 5
    assert "3 older finished campaigns not shown (--all lists them)" in shown
    assert "finished-0" in status(redis_url, tmp_path, "--all").stdout
    fewer = status(redis_url, tmp_path, "--last", "1").stdout
    assert "finished-7" in fewer and "finished-6" not in fewer
    assert "7 older finished campaigns not shown" in fewer


def test_status_of_one_campaign_takes_latest_a_prefix_or_a_name(
    client: redis.Redis, redis_url: str, tmp_path: Path
) -> None:
    add_campaign(client, "geo-20260301-120000-aaaa", 0, name="geo")
    add_campaign(client, "evals-20260301-121000-bbbb", 10, total=4, done=1)
    newest = status(redis_url, tmp_path, "latest").stdout
    assert "evals-20260301-121000-bbbb" in newest and "1/4 (0 without a result)" in newest
    assert "geo-20260301-120000-aaaa" in status(redis_url, tmp_path, "geo-2026").stdout
    assert "geo-20260301-120000-aaaa" in status(redis_url, tmp_path, "geo").stdout
    env = {**os.environ, "EVALRELAY_REDIS_URL": redis_url}
    unknown = evalrelay("status", "nope", env=env, cwd=tmp_path)
    assert unknown.returncode == 1
    assert "error: no campaign 'nope' in this Redis; the newest:" in unknown.stderr


def test_status_of_one_campaign_counts_its_jobs_without_a_result(
    client: redis.Redis, redis_url: str, tmp_path: Path
) -> None:
    """Counted by id, over more ids than one round trip asks about: an id collected that
    the campaign does not list is none of its jobs."""
    campaign = "geo-20260301-120000-aaaa"
    add_campaign(client, campaign, 0, total=2500)
    pipe = client.pipeline()
    list_jobs(pipe, campaign, [f"job-{i}" for i in range(2500)], 3600)
    pipe.execute()
    client.sadd(collected_key(campaign), *[f"job-{i}" for i in range(0, 2500, 2)], "job-other")
    shown = status(redis_url, tmp_path, campaign).stdout
    assert "(1250 without a result)" in shown


def test_status_shows_the_calls_a_campaign_paid_again_and_why(
    client: redis.Redis, redis_url: str, tmp_path: Path
) -> None:
    campaign = "paid-20260301-120000-aaaa"
    add_campaign(client, campaign, 2, total=2, done=2)
    client.hset(paid_again_key(campaign), mapping={"duplicate": 2, "late copy": 1})
    listed = " ".join(status(redis_url, tmp_path).stdout.split())
    assert "2/2 +3 paid again" in listed, listed
    shown = " ".join(status(redis_url, tmp_path, campaign).stdout.split())
    assert "paid again │ 3 calls past one per job: 2 duplicate, 1 late copy" in shown, shown


def test_status_lists_workers_300_s_behind_and_ahead_as_just_seen(
    processes: Processes, client: redis.Redis, redis_url: str, tmp_path: Path
) -> None:
    """Every `seen` and the time it is compared with are Redis's: a worker's clock 300 s off
    (and the clock of `status` itself) changes nothing."""
    for name, clock in (("ahead@test", SKEW), ("behind@test", -SKEW)):
        processes.worker(client, name, "-c", "1", extra_env=skewed_clock(clock))
    for clock in (0, SKEW, -SKEW):
        env = {**os.environ, **skewed_clock(clock)}
        shown = evalrelay(
            "status", env=env | {"EVALRELAY_REDIS_URL": redis_url, "COLUMNS": "200"}, cwd=tmp_path
        )
        assert shown.returncode == 0, shown.stderr
        for name in ("ahead@test", "behind@test"):
            (line,) = [line for line in shown.stdout.splitlines() if name in line] or [shown.stdout]
            seen = re.search(r"│ (-?\d+)s ago", line)
            assert seen and 0 <= int(seen.group(1)) <= WORKER_HEARTBEAT_SECONDS + 2, line
            assert "gone" not in line, line

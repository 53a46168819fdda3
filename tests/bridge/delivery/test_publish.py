"""No piece of a secret the worker holds reaches any sink: a vendor that echoes the key back
JSON-escaped, URL-encoded, base64-encoded and cut in pieces, a worker logging at debug level,
and a Redis with a password, through the real CLI, worker and reports."""

from __future__ import annotations

import asyncio
import base64
import json
import os
import secrets
import shutil
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import quote

import pytest
import redis

from evalrelay.bridge.connection import client_for
from evalrelay.bridge.delivery.lease import Lease
from evalrelay.bridge.delivery.publish import ALREADY_PUBLISHED, LATE_COPY, PUBLISHED
from evalrelay.bridge.delivery.publish import publish as publish_on_loop
from evalrelay.bridge.delivery.round_trips import RoundTrips
from evalrelay.bridge.keys import (
    compacted_key,
    done_key,
    holders_key,
    inflight_key,
    lease_key,
    outstanding_key,
    paid_again_key,
    results_stream_key,
    target_tally_key,
    workers_key,
)
from evalrelay.bridge.results.paid import paid_again
from evalrelay.bridge.results.result import Result, Status
from evalrelay.worker.execute import never_started
from tests.bridge.cli.test_run import evalrelay
from tests.conftest import (
    HoldingRelay,
    Processes,
    WriteFiles,
    direct_job,
    free_port,
    read_jsonl,
    wait_for,
)
from tests.worker.providers.vendor_server import Reply, Seen, openai_chat, serving

KEY = f"sk-test-{secrets.token_hex(6)}-{secrets.token_hex(8)}-{secrets.token_hex(10)}"
REDIS_PASSWORD = f"redis-pw-{secrets.token_hex(12)}"


def pieces(secret: str, size: int = 8) -> set[str]:
    return {secret[i : i + size] for i in range(len(secret) - size + 1)}


def leaks(text: str) -> list[str]:
    """The 8-character pieces of the key or the Redis password found in `text`."""
    return sorted(p for p in pieces(KEY) | pieces(REDIS_PASSWORD) if p in text)


def echoed(seen: Seen) -> tuple[dict[str, object], dict[str, str]]:
    """The request's Authorization header back, in the answer and in the response headers."""
    auth = seen.headers["authorization"]
    key = auth.removeprefix("Bearer ")
    forms = [
        json.dumps(auth).replace("-", "\\u002d"),  # JSON-escaped, only the dashes
        quote(auth, safe=""),
        base64.b64encode(auth.encode()).decode(),
        base64.b64encode(f"user:{key}".encode()).decode(),
        " / ".join(key[i : i + 12] for i in range(0, len(key), 12)),
    ]
    headers = {"x-echo-authorization": auth, "x-echo-escaped": auth.replace("-", "\\u002d")}
    return openai_chat("You sent: " + " | ".join(forms)), headers


@pytest.fixture
def locked_redis(tmp_path: Path) -> Iterator[str]:
    """A redis-server of the test's own that asks for a password, keeping an append-only file."""
    binary = shutil.which("redis-server")
    assert binary, "redis-server must be installed for this test"
    folder = tmp_path / "redis"
    folder.mkdir()
    port = free_port()
    server = subprocess.Popen(
        [binary, "--port", str(port), "--bind", "127.0.0.1", "--dir", str(folder),
         "--requirepass", REDIS_PASSWORD, "--appendonly", "yes", "--save", ""],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True,
    )  # fmt: skip
    url = f"redis://:{REDIS_PASSWORD}@127.0.0.1:{port}/0"

    def answers() -> bool:
        try:
            return bool(redis.Redis.from_url(url, socket_connect_timeout=1).ping())
        except (redis.RedisError, OSError):
            return False

    try:
        wait_for(answers, 20, "the private redis-server")
        yield url
    finally:
        server.terminate()
        server.wait(20)


def everything_in(client: redis.Redis) -> str:
    """Every key and every value in Redis, streams included, as one text."""
    read = {
        "string": client.get,
        "hash": client.hgetall,
        "list": lambda key: client.lrange(key, 0, -1),
        "set": client.smembers,
        "zset": lambda key: client.zrange(key, 0, -1, withscores=True),
        "stream": client.xrange,
    }
    return "\n".join(f"{key} {read[client.type(key)](key)!r}" for key in client.scan_iter())


def test_no_piece_of_a_secret_reaches_results_reports_redis_or_logs(
    project: WriteFiles, private_home: Path, tmp_path: Path, locked_redis: str
) -> None:
    env = {
        **{k: v for k, v in os.environ.items() if k != "EVALRELAY_REDIS_URL"},
        "EVALRELAY_REDIS_URL": locked_redis,
        "EVALRELAY_HOME": str(private_home),
        "OPENAI_API_KEY": KEY,
        "PYTHONUNBUFFERED": "1",
    }
    client = redis.Redis.from_url(locked_redis, decode_responses=True)
    logs = tmp_path / "logs"
    logs.mkdir()
    processes = Processes(env, logs)
    with serving(Reply(None, made=echoed)) as server:
        try:
            processes.start("-vv", "worker", "--name", "w@mask", "-l", "DEBUG", name="worker")
            wait_for(lambda: "w@mask" in client.hkeys(workers_key()), 30, "the worker to start")
            targets = (
                "targets:\n  - {name: echo-key, provider: openai, model: gpt-test, "
                f"base_url: '{server.url}/v1', retry_initial_delay_ms: 10}}\n"
            )
            cases = "evalcases: [{id: a, input_messages: [{role: user, content: hi}]}]\n"
            root = project({"targets.yaml": targets, "evals/a.yaml": cases})
            done = evalrelay(
                "-vv", "run", "evals/a.yaml", "--target", "echo-key", "--out", "out",
                env=env, cwd=root,
            )  # fmt: skip
            assert done.returncode == 0, done.stderr
        finally:
            processes.stop_all()
    assert server.seen[0].headers["authorization"] == f"Bearer {KEY}"  # the key did travel
    (jsonl,) = (root / "out").glob("*.jsonl")
    (line,) = read_jsonl(jsonl)
    assert line["status"] == "ok", line.get("error")
    assert "You sent: " in str(line["answer"])

    reported = evalrelay(
        "report", str(jsonl), "--html", "r.html", "--markdown", "r.md", env=env, cwd=root
    )
    assert reported.returncode == 0, reported.stderr
    sinks = {
        "results JSONL": jsonl.read_text(),
        "summary.json": "\n".join(p.read_text() for p in (root / "out").rglob("*summary*.json")),
        "HTML report": (root / "r.html").read_text(),
        "Markdown report": (root / "r.md").read_text(),
        "Redis": everything_in(client),
        "worker log": processes.log("worker"),
        "CLI output": done.stdout + done.stderr + reported.stdout + reported.stderr,
    }
    assert sinks["summary.json"], list((root / "out").rglob("*"))
    assert "DEBUG" in sinks["worker log"] or "debug" in sinks["worker log"].lower()
    found = {sink: leaks(text) for sink, text in sinks.items() if leaks(text)}
    assert not found, found
    assert "***" in str(line["answer"])


def a_result(campaign_id: str, job_id: str) -> Result:
    job = direct_job(campaign_id=campaign_id, job_id=job_id)
    return never_started(job, "w1", Status.TIMEOUT, "nothing free", time.time())


def test_a_result_is_published_once_and_says_so(client: redis.Redis) -> None:
    result = a_result("going", "p1")
    assert publish(client, result, "api") == PUBLISHED
    assert publish(client, result, "api") == ALREADY_PUBLISHED
    assert client.xlen(results_stream_key("going")) == 1
    assert client.hget(target_tally_key(result.target), "timeout") == "1"


def test_a_late_copy_of_a_compacted_campaign_reaches_no_stream_no_tally_no_mark(
    client: redis.Redis,
) -> None:
    """Its campaign's file is whole and nobody reads its stream: the copy is dropped, its
    lease released and its hold let go, and the target's tally counts the job once."""
    result = a_result("whole", "p2")
    client.set(compacted_key("whole"), "{}")
    lease = Lease.acquire(client, "p2", "w1", seconds=30)
    assert lease is not None
    client.hset(holders_key(), "p2", "m1 w1/host/1/x")
    client.zadd(outstanding_key("api"), {"p2": 1})
    assert publish(client, result, "api", lease.token, "m1") == LATE_COPY
    assert not client.exists(results_stream_key("whole"))
    assert not client.exists(done_key("whole", "p2"))
    assert not client.exists(target_tally_key(result.target))
    assert client.get(lease_key("p2")) is None and client.zscore(inflight_key(), "p2") is None
    assert client.hget(holders_key(), "p2") is None
    assert client.zscore(outstanding_key("api"), "p2") is None


def test_calls_past_one_per_job_are_counted_by_why(client: redis.Redis) -> None:
    """A second copy that ran to its end, a retry, a late copy: each paid for a call the
    campaign did not need once; a job that never reached its target paid for none."""
    first = a_result("paying", "p3")
    assert publish(client, first, "api") == PUBLISHED
    assert paid_again(client, "paying") == {}
    assert publish(client, first, "api") == ALREADY_PUBLISHED
    retried = first.model_copy(update={"attempt": 2})
    assert publish(client, retried, "api") == PUBLISHED
    never = a_result("paying", "p4")
    assert publish(client, never, "api", called=False) == PUBLISHED
    assert publish(client, never, "api", called=False) == ALREADY_PUBLISHED
    client.set(compacted_key("paying"), "{}")
    assert publish(client, a_result("paying", "p5"), "api") == LATE_COPY
    assert paid_again(client, "paying") == {"duplicate": 1, "retry": 1, "late copy": 1}
    assert client.ttl(paid_again_key("paying")) > 0  # kept with the campaign's record


def test_a_publication_whose_reply_was_lost_is_sent_again_and_published_once(
    client: redis.Redis, redis_url: str
) -> None:
    """Redis ran the publication, and its reply never came back: the worker's client gives
    the connection up after its reply timeout and sends the publication again on a new
    one, which finds the done mark its first send wrote. Published (its budget charged
    as such), one line in the stream, nothing paid again; another copy's publication of the
    same attempt is a second call still."""
    relay = HoldingRelay(redis_url, b"lost-reply-job", later_pass=True, replies_lost=True)
    try:
        result = a_result("lost-reply", "lost-reply-job")
        assert publish(client_for(relay.url, reply_timeout=1.0), result, "api") == PUBLISHED
    finally:
        relay.close()
    assert relay.held.is_set(), "the first send did not reach the relay"
    assert client.xlen(results_stream_key("lost-reply")) == 1
    assert paid_again(client, "lost-reply") == {}
    assert publish(client, result, "api") == ALREADY_PUBLISHED
    assert paid_again(client, "lost-reply") == {"duplicate": 1}


def publish(
    client: redis.Redis,
    result: Result,
    queue: str,
    lease_token: str = "",
    message_id: str = "",
    called: bool = True,
) -> str:
    """The worker's publish, awaited from this test's thread on a loop of its own."""
    rounds = RoundTrips(client)
    return asyncio.run(publish_on_loop(rounds, result, queue, lease_token, message_id, called))

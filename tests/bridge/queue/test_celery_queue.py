"""Jobs leave as the very messages Celery's `send_task` would have sent, in one round trip:
API jobs in batches of one target, agent jobs one to a message."""

from __future__ import annotations

import base64
import json
import time
from datetime import datetime
from typing import Any

import redis

from evalrelay.bridge.contract.names import RUN_BATCH, RUN_CASE
from evalrelay.bridge.delivery.outstanding import SENT_HEADER
from evalrelay.bridge.delivery.payloads import (
    batch_argument,
    batch_payloads,
    job_of,
    jobs_of,
    payload_of,
)
from evalrelay.bridge.queue.celery_queue import (
    MAX_BATCH,
    JobQueue,
    batch_size,
    in_messages,
    producer_app,
)
from tests.conftest import direct_job

VARYING = {"id", "root_id", "correlation_id", "delivery_tag", "origin", "argsrepr", "eta"}
"""Fields that differ from one message to the next whoever sends it."""


def popped(client: redis.Redis, queue: str) -> dict[str, Any]:
    raw = client.rpop(queue)
    assert raw is not None, f"nothing on {queue}"
    message: dict[str, Any] = json.loads(raw)
    message["body"] = json.loads(base64.b64decode(message["body"]))
    return message


def comparable(message: dict[str, Any]) -> dict[str, Any]:
    def strip(fields: dict[str, Any]) -> dict[str, Any]:
        return {k: v for k, v in fields.items() if k not in VARYING}

    return {
        **message,
        "headers": strip(message["headers"]),
        "properties": strip({**message["properties"], "reply_to": None}),
    }


def send_task_alike(
    client: redis.Redis,
    redis_url: str,
    ours: dict[str, Any],
    task: str,
    args: list[Any],
    queue: str,
) -> dict[str, Any]:
    """The message `send_task` sends with the same task, arguments and headers as `ours`."""
    limit = ours["headers"]["timelimit"]
    extra = {SENT_HEADER: ours["headers"][SENT_HEADER]}
    producer_app(redis_url).send_task(
        task,
        args=args,
        queue=queue,
        headers=extra,
        time_limit=limit[0],
        soft_time_limit=limit[1],
        ignore_result=True,
    )
    return popped(client, queue)


def test_api_jobs_go_as_the_batch_message_send_task_sends(
    client: redis.Redis, redis_url: str
) -> None:
    jobs = [direct_job(job_id=f"j{i}", case_id=f"c{i}") for i in range(128)]
    JobQueue.connect(redis_url).send(jobs)  # 128 waiting: 64 messages of 2
    assert client.llen("api") == 64
    ours = popped(client, "api")
    jobs = jobs[:2]
    client.delete("api")
    celery_s = send_task_alike(client, redis_url, ours, RUN_BATCH, [batch_argument(jobs)], "api")

    assert comparable(ours) == comparable(celery_s)
    assert ours["body"][0] == ["j0 j1"]  # one string names the batch's stored jobs
    assert jobs_of(client, batch_payloads(ours["body"][0][0])) == jobs
    assert ours["headers"]["id"].startswith("batch-")
    assert ours["properties"]["delivery_info"] == {"exchange": "", "routing_key": "api"}


def test_an_agent_job_goes_alone_as_the_message_send_task_sends(
    client: redis.Redis, redis_url: str
) -> None:
    job = direct_job({"name": "a", "provider": "codex"})
    assert job.target.queue == "agent.codex"
    JobQueue.connect(redis_url).send([job])
    ours = popped(client, job.target.queue)
    payload = payload_of(job)
    celery_s = send_task_alike(client, redis_url, ours, RUN_CASE, [payload], job.target.queue)

    assert comparable(ours) == comparable(celery_s)
    assert job_of(client, ours["body"][0][0]) == job
    assert ours["headers"]["id"].startswith(f"{job.job_id}-1-")


def test_batches_hold_one_target_each_sized_by_how_many_wait() -> None:
    a = [direct_job(job_id=f"a{i}") for i in range(300)]
    b = [direct_job({"name": "b", "provider": "mock", "workers": 2}, job_id=f"b{i}")
         for i in range(300)]  # fmt: skip
    messages = in_messages([x for pair in zip(a, b, strict=True) for x in pair])
    assert all(len({job.target.name for job in m}) == 1 for m in messages)
    assert {len(m) for m in messages if m[0].target.name == "t"} == {5}  # 300 over ~64
    assert {len(m) for m in messages if m[0].target.name == "b"} == {2}  # its concurrency
    assert batch_size(1) == 1
    assert batch_size(10**6) == MAX_BATCH


def test_a_countdown_becomes_the_messages_eta(client: redis.Redis, redis_url: str) -> None:
    before = time.time()
    JobQueue.connect(redis_url).send([direct_job()], countdown=30)
    eta = datetime.fromisoformat(popped(client, "api")["headers"]["eta"]).timestamp()
    assert before + 30 <= eta <= time.time() + 30


def test_a_batch_goes_in_order_each_job_once(client: redis.Redis, redis_url: str) -> None:
    jobs = [direct_job(job_id=f"{i:032x}", case_id=f"c{i}") for i in range(250)]
    assert JobQueue.connect(redis_url).send(jobs) == 250
    sent = []
    while client.llen("api"):
        sent += [p["job_id"] for p in batch_payloads(popped(client, "api")["body"][0][0])]
    assert sent == [job.job_id for job in jobs]
    assert client.llen("api") == 0

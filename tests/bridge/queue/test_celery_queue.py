"""Jobs leave as the very messages Celery's `send_task` would have sent, in one round trip."""

from __future__ import annotations

import base64
import json
import time
from datetime import datetime
from typing import Any

import redis

from bridge.queue.celery_queue import RUN_CASE, JobQueue, producer_app
from bridge.queue.outstanding import SENT_HEADER
from bridge.queue.payloads import job_of, payload_of
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


def test_a_job_message_is_what_send_task_sends(client: redis.Redis, redis_url: str) -> None:
    job = direct_job()
    JobQueue.connect(redis_url).send([job])
    ours = popped(client, job.target.queue)

    app = producer_app(redis_url)
    limit = ours["headers"]["timelimit"]
    app.send_task(
        RUN_CASE,
        args=[payload_of(job)],
        queue=job.target.queue,
        headers={SENT_HEADER: ours["headers"][SENT_HEADER]},
        time_limit=limit[0],
        soft_time_limit=limit[1],
        ignore_result=True,
    )
    celery_s = popped(client, job.target.queue)

    assert comparable(ours) == comparable(celery_s)
    assert job_of(client, ours["body"][0][0]) == job
    assert ours["headers"]["id"].startswith(f"{job.job_id}-1-")
    assert ours["properties"]["delivery_info"] == {"exchange": "", "routing_key": "api"}


def test_a_countdown_becomes_the_messages_eta(client: redis.Redis, redis_url: str) -> None:
    before = time.time()
    JobQueue.connect(redis_url).send([direct_job()], countdown=30)
    eta = datetime.fromisoformat(popped(client, "api")["headers"]["eta"]).timestamp()
    assert before + 30 <= eta <= time.time() + 30


def test_a_batch_goes_in_order_each_job_once(client: redis.Redis, redis_url: str) -> None:
    jobs = [direct_job(job_id=f"{i:032x}", case_id=f"c{i}") for i in range(250)]
    assert JobQueue.connect(redis_url).send(jobs) == 250
    sent = [popped(client, "api")["body"][0][0]["job_id"] for _ in range(250)]
    assert sent == [job.job_id for job in jobs]
    assert client.llen("api") == 0

"""The baseline: bare Celery on the same Redis, one no-op task that counts itself."""

from __future__ import annotations

import os

import redis
from celery import Celery

URL = os.environ.get("EVALRELAY_REDIS_URL", "redis://127.0.0.1:6379/14")
app = Celery("bench-noop", broker=URL)
app.conf.update(
    task_serializer="json",
    accept_content=["json"],
    task_ignore_result=True,
    task_acks_late=True,
    worker_prefetch_multiplier=1,
    broker_connection_retry_on_startup=True,
)
counter = redis.Redis.from_url(URL)


@app.task(name="bench.noop")
def noop() -> None:
    counter.incr("bench:noop:done")

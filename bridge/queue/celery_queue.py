"""Sending jobs to the workers' queues, by task name, over the same Redis as everything else.

The submitting side never imports the worker package to send: the task name and the
message's payload (`bridge.queue.payloads`) are the whole contract.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

import redis
from celery import Celery
from kombu import serialization

from bridge.evalfile.limits import MAX_JOB_SECONDS
from bridge.queue.connection import broker_url, client_for
from bridge.queue.jobs import Job, new_message_id
from bridge.queue.outstanding import SENT_HEADER, ids_by_queue, mark_sent
from bridge.queue.payloads import keep_stored, payload_of

RUN_CASE = "evalrelay.run_case"
"""The Celery task that runs one job."""

QUEUES = ("api", "agent.vscode", "agent.codex", "agent.cli")

MARK_BATCH = 100
"""How many jobs are recorded as outstanding at a time, just before their messages go."""

PERSISTENT = 2
"""AMQP's delivery mode for a message kept across broker restarts, as `send_task` sets it."""

HARD_LIMIT_GRACE_SECONDS = 60.0
"""How long past its own deadline a job may run before a prefork pool kills it."""


def producer_app(redis_url: str) -> Celery:
    app = Celery("evalrelay-bridge", broker=broker_url(redis_url), set_as_current=False)
    app.conf.update(
        task_serializer="json",
        accept_content=["json"],
        result_serializer="json",
        task_ignore_result=True,
        broker_connection_retry_on_startup=True,
    )
    return app


class JobQueue:
    """Puts jobs on the queue their target's kind routes them to."""

    def __init__(self, app: Celery, client: redis.Redis) -> None:
        self.app = app
        self.client = client

    @classmethod
    def connect(cls, url: str) -> JobQueue:
        return cls(producer_app(url), client_for(url))

    def send(self, jobs: Iterable[Job], countdown: float | None = None) -> int:
        """Queue the jobs, to start no sooner than `countdown` seconds from now if given.

        Each is first recorded as outstanding (`bridge.queue.outstanding`), so that a job
        is never on its way without the record that lets the reaper find it if lost. The
        records go `MARK_BATCH` at a time, then that batch's messages in one Redis round
        trip: a sender killed halfway leaves at most that many recorded and never sent,
        which the reaper finds as lost.
        """
        jobs = list(jobs)
        with self.app.producer_or_acquire() as producer:
            for start in range(0, len(jobs), MARK_BATCH):
                batch = jobs[start : start + MARK_BATCH]
                pipe = self.client.pipeline(transaction=False)
                keep_stored(self.client, pipe, batch)
                mark_sent(pipe, ids_by_queue(batch))
                *_, sent_ms = pipe.execute()
                self._publish(producer.channel, batch, sent_ms, countdown)
        return len(jobs)

    def _publish(
        self, channel: Any, jobs: Sequence[Job], sent_ms: int, countdown: float | None
    ) -> None:
        """The jobs' messages through kombu's publish batch (one pipeline of LPUSHes).

        Celery builds each task message (`as_task_v2`, the same as `send_task` does) and
        kombu wraps it for its Redis transport; what is skipped is `send_task`'s
        per-message machinery around them, which cost ten times as much as this.
        """
        batch = channel.create_publish_batch(max_size=len(jobs) + 1)
        try:
            for job in jobs:
                message = self._task_message(job, sent_ms, countdown)
                content_type, encoding, body = serialization.dumps(message.body, "json")  # type: ignore[no-untyped-call]
                properties = {**message.properties, "delivery_mode": PERSISTENT}
                prepared = channel.prepare_message(
                    body, 0, content_type, encoding, message.headers, properties
                )
                batch.publish(prepared, exchange="", routing_key=job.target.queue)
            batch.flush()
        finally:
            batch.close()

    def _task_message(self, job: Job, sent_ms: int, countdown: float | None) -> Any:
        limit = min(job.timeout_seconds, MAX_JOB_SECONDS) + HARD_LIMIT_GRACE_SECONDS
        message = self.app.amqp.as_task_v2(
            new_message_id(job),
            RUN_CASE,
            args=[payload_of(job)],
            kwargs={},
            countdown=countdown,
            time_limit=limit,
            soft_time_limit=limit - HARD_LIMIT_GRACE_SECONDS / 2,
            # Celery would otherwise build a repr of the whole job for its logs.
            argsrepr=f"[job {job.job_id} case {job.case_id!r} target {job.target.name!r}]",
            kwargsrepr="{}",
            ignore_result=True,
        )
        message.headers[SENT_HEADER] = sent_ms
        return message

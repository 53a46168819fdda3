"""Sending jobs to the workers' queues, by task name, over the same Redis as everything else.

The submitting side never imports the worker package to send: the task name
(`bridge.contract.names`) and the message's payload (`bridge.delivery.payloads`) are the
whole contract.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

import redis
from celery import Celery
from kombu import serialization

from evalrelay.bridge.connection import broker_url, client_for
from evalrelay.bridge.contract.job import Job, new_batch_id, new_message_id
from evalrelay.bridge.contract.names import RUN_BATCH, RUN_CASE
from evalrelay.bridge.delivery.outstanding import SENT_HEADER, ids_by_queue, mark_sent
from evalrelay.bridge.delivery.payloads import batch_argument, keep_stored, payload_of
from evalrelay.bridge.evalfile.limits import MAX_JOB_SECONDS

BATCHED_QUEUE = "api"

MAX_BATCH = 64
"""Jobs in one message at most: Celery's per-message cost is paid once for them all."""

BATCH_SPREAD = 64
"""A campaign's jobs for one target go in about this many messages (fewer when few jobs
wait), so that a fleet's workers share them and none hoards the campaign's tail."""

MARK_BATCH = 1000
"""How many jobs are recorded as outstanding at a time, just before their messages go (as
many as `submit` sends at once): each group costs a round trip and a publish batch, so
groups must be large for the enqueueing of a big campaign not to be spent on them."""

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

    def send(
        self,
        jobs: Iterable[Job],
        countdown: float | None = None,
        per_message: int | None = None,
        *,
        announced_ms: int | None = None,
    ) -> int:
        """Queue the jobs, to start no sooner than `countdown` seconds from now if given.
        `announced_ms`: the sender stored the jobs and recorded them as sent at this time
        (`store_jobs`, then `announce`, which returns it); their messages carry that time,
        and the jobs are neither encoded nor recorded again (together, two fifths of a
        large campaign's enqueueing).

        Each is first recorded as outstanding (`bridge.delivery.outstanding`), so that a job
        is never on its way without the record that lets the reaper find it if lost. The
        records go `MARK_BATCH` at a time, then that batch's messages in one Redis round
        trip: a sender killed halfway leaves at most that many recorded and never sent,
        which the reaper finds as lost.
        """
        jobs = list(jobs)
        messages = in_messages(jobs, per_message)
        with self.app.producer_or_acquire() as producer:
            start = 0
            while start < len(messages):
                end, marked = start, 0
                while end < len(messages) and (marked < MARK_BATCH or end == start):
                    marked += len(messages[end])
                    end += 1
                group = messages[start:end]
                sent_ms = announced_ms
                if sent_ms is None:
                    pipe = self.client.pipeline(transaction=False)
                    grouped = [job for message in group for job in message]
                    keep_stored(self.client, pipe, grouped)
                    mark_sent(pipe, ids_by_queue(grouped))
                    *_, sent_ms = pipe.execute()
                self._publish(producer.channel, group, sent_ms, countdown)
                start = end
        return len(jobs)

    def _publish(
        self, channel: Any, messages: Sequence[list[Job]], sent_ms: int, countdown: float | None
    ) -> None:
        """The jobs' messages through kombu's publish batch (one pipeline of LPUSHes).

        Celery builds each task message (`as_task_v2`, the same as `send_task` does) and
        kombu wraps it for its Redis transport; what is skipped is `send_task`'s
        per-message machinery around them, which costs far more than this (figures:
        docs/performance.md).
        """
        batch = channel.create_publish_batch(max_size=len(messages) + 1)
        try:
            for jobs in messages:
                message = self._task_message(jobs, sent_ms, countdown)
                content_type, encoding, body = serialization.dumps(message.body, "json")  # type: ignore[no-untyped-call]
                properties = {**message.properties, "delivery_mode": PERSISTENT}
                prepared = channel.prepare_message(
                    body, 0, content_type, encoding, message.headers, properties
                )
                batch.publish(prepared, exchange="", routing_key=jobs[0].target.queue)
            batch.flush()
        finally:
            batch.close()

    def _task_message(self, jobs: list[Job], sent_ms: int, countdown: float | None) -> Any:
        """One job's `run_case` message, or a batch's `run_batch` (API jobs, even alone)."""
        first = jobs[0]
        limit = min(first.timeout_seconds, MAX_JOB_SECONDS) + HARD_LIMIT_GRACE_SECONDS
        if first.target.queue == BATCHED_QUEUE:
            # A prefork child runs the batch's jobs at once, each within its own time.
            limit = min(max(j.timeout_seconds for j in jobs), MAX_JOB_SECONDS)
            limit += HARD_LIMIT_GRACE_SECONDS
            name = RUN_BATCH
            args: list[Any] = [batch_argument(jobs)]
            message_id = new_batch_id()
            what = f"[{len(jobs)} jobs of target {first.target.name!r} from {first.job_id}]"
        else:
            name, args = RUN_CASE, [payload_of(first)]
            message_id = new_message_id(first)
            what = f"[job {first.job_id} case {first.case_id!r} target {first.target.name!r}]"
        message = self.app.amqp.as_task_v2(
            message_id,
            name,
            args=args,
            kwargs={},
            countdown=countdown,
            time_limit=limit,
            soft_time_limit=limit - HARD_LIMIT_GRACE_SECONDS / 2,
            # Celery would otherwise build a repr of the whole job for its logs.
            argsrepr=what,
            kwargsrepr="{}",
            ignore_result=True,
        )
        message.headers[SENT_HEADER] = sent_ms
        return message


def in_messages(jobs: Sequence[Job], per_message: int | None = None) -> list[list[Job]]:
    """The jobs as messages: API jobs in batches of one target (of `per_message` jobs when
    given, else `batch_size`), in the order sent; each agent job alone (an agent runs for
    minutes: a batch would hold the others back)."""
    by_target: dict[str, list[Job]] = {}
    messages: list[list[Job]] = []
    for job in jobs:
        if job.target.queue == BATCHED_QUEUE:
            by_target.setdefault(job.target.name, []).append(job)
        else:
            messages.append([job])
    for waiting in by_target.values():
        settings = waiting[0].target.settings
        concurrency = settings.get("max_concurrency") or settings.get("workers")
        size = per_message or batch_size(len(waiting), concurrency)
        messages += [waiting[i : i + size] for i in range(0, len(waiting), size)]
    return messages


def batch_size(waiting: int, concurrency: Any = None) -> int:
    """How many of a target's `waiting` jobs one message carries: enough for the messages to
    cost little next to the calls, few enough to spread over `BATCH_SPREAD` messages, and no
    more than the target runs at once (`max_concurrency`) across the fleet."""
    cap = MAX_BATCH
    if isinstance(concurrency, int) and concurrency > 0:
        cap = min(cap, concurrency)
    return max(1, min(cap, -(-waiting // BATCH_SPREAD)))

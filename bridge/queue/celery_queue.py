"""Sending jobs to the workers' queues, by task name, over the same Redis as everything else.

The submitting side never imports the worker package to send: the task name and the job's
JSON are the whole contract.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterable

from celery import Celery

from bridge.evalfile.limits import MAX_JOB_SECONDS
from bridge.queue.connection import broker_url
from bridge.queue.jobs import Job

RUN_CASE = "evalrelay.run_case"
"""The Celery task that runs one job."""

QUEUES = ("api", "agent.vscode", "agent.codex", "agent.cli")

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

    def __init__(self, app: Celery) -> None:
        self.app = app

    def send(self, jobs: Iterable[Job], countdown: float | None = None) -> int:
        """Queue the jobs, to start no sooner than `countdown` seconds from now if given.

        Every message gets an id of its own (the job id, its attempt, a random tail), so
        the worker holding a message can be told from the one holding a later message
        of the same job (`bridge.queue.holders`).
        """
        sent = 0
        with self.app.producer_or_acquire() as producer:
            for job in jobs:
                limit = min(job.timeout_seconds, MAX_JOB_SECONDS) + HARD_LIMIT_GRACE_SECONDS
                self.app.send_task(
                    RUN_CASE,
                    args=[job.model_dump(mode="json")],
                    queue=job.target.queue,
                    task_id=f"{job.job_id}-{job.attempt}-{uuid.uuid4().hex[:12]}",
                    countdown=countdown,
                    time_limit=limit,
                    soft_time_limit=limit - HARD_LIMIT_GRACE_SECONDS / 2,
                    producer=producer,
                )
                sent += 1
        return sent

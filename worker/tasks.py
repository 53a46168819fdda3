"""`run_case`: one agent job (or a trial) a message, run by the job run every task uses
(`worker.job_run.run_job`) on this process's loop, the agent on a thread of its own."""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any

import redis
from celery import Celery, Task

from evalrelay.bridge.contract.names import RUN_CASE
from evalrelay.bridge.delivery.holders import let_go
from evalrelay.bridge.delivery.payloads import job_of
from evalrelay.bridge.queue.celery_queue import JobQueue
from evalrelay.worker.job_run import JOB_TASK
from evalrelay.worker.loop import worker_loop
from evalrelay.worker.stopping import hand_back, released, stopping

log = logging.getLogger(__name__)


def register_tasks(app: Celery, client: Callable[[], redis.Redis]) -> None:
    @app.task(name=RUN_CASE, **JOB_TASK)
    def run_case(self: Task, payload: dict[str, Any]) -> str:
        worker = self.request.hostname or "worker"
        message: str = self.request.id
        job = job_of(client(), payload)
        if job is None:
            log.warning("job %s: no longer stored; this delivery is ignored", payload["job_id"])
            let_go(client(), str(payload["job_id"]), message)
            return "no longer stored"
        if stopping.is_set():  # reached a pool thread after the worker began to stop
            if message in released:
                return "handed back"  # its message is on its queue again
            return hand_back(client(), JobQueue(app, client()), [job], message)
        # On any other exception (Redis gone at publish time) the worker keeps holding the
        # job on record: when this process ends, the reaper sends it again.
        return worker_loop().run_one(client(), JobQueue(app, client()), job, worker, message)

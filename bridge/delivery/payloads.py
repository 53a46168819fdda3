"""What a queue message carries of a job, and the job a worker makes of it again.

A job's JSON (about 1.2 KB for a one-turn case, more with files, rubrics or a long
prompt) is stored in Redis once, under its id, for the reaper, `resume` and `retry`
(`bridge.queue.campaigns.store_jobs`). Carrying it whole in its message as well doubled
what a queued campaign costs Redis, and kombu's base64 of the body added a third on top.
So a message names the job (its id, attempt, and when it began waiting for capacity if
it did: the campaign is in the stored job, and a batch of 64 jobs carried its id 64
times), and the worker reads the stored job. Sending stores a job that is not stored
yet (a job sent by hand, or by a test), so every message names a job Redis has.

A batch message names each of its jobs once, in one string (`batch_argument`): the
worker's holds and the sweep of `unacked` read the ids from there too, so a queued job
costs Redis its id and little else (kombu keeps the body in base64).

These functions are the whole contract between sender and worker on a message's content:
`payload_of` and `batch_argument` build it, `job_of`, `batch_payloads` and
`message_job_ids` read it back.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from typing import Any

import redis

from evalrelay.bridge.connection import through_outage
from evalrelay.bridge.contract.job import Job
from evalrelay.bridge.contract.names import RUN_BATCH
from evalrelay.bridge.contract.stored import encoded, read_jobs
from evalrelay.bridge.keys import job_key
from evalrelay.bridge.results.retention import RETENTION_SECONDS

log = logging.getLogger(__name__)


def payload_of(job: Job) -> dict[str, Any]:
    """The message's argument for `job`: a reference to the stored job (a waiting time
    only once it has one: base64 made each `null` cost a queued job 30 bytes)."""
    payload: dict[str, Any] = {"job_id": job.job_id, "attempt": job.attempt}
    if job.waiting_since is not None:
        payload["waiting_since"] = job.waiting_since
    return payload


JOBS_APART, FIELDS_APART = " ", "/"
"""What separates a batch argument's jobs, and each job's id from its attempt and waiting
time. A job id holds neither (`bridge.contract.job.job_id`: hex digits)."""


def batch_argument(jobs: Sequence[Job]) -> str:
    """A batch message's argument: its jobs' payloads in one string, each `id`, or
    `id/attempt` past the first attempt, or `id/attempt/waiting_since` once it waits."""
    entries = []
    for job in jobs:
        if JOBS_APART in job.job_id or FIELDS_APART in job.job_id:
            raise ValueError(f"job id {job.job_id!r} holds a space or a slash")
        fields = [job.job_id]
        if job.attempt != 1 or job.waiting_since is not None:
            fields.append(str(job.attempt))
        if job.waiting_since is not None:
            fields.append(repr(job.waiting_since))
        entries.append(FIELDS_APART.join(fields))
    return JOBS_APART.join(entries)


def batch_payloads(argument: str) -> list[dict[str, Any]]:
    """The payloads (`payload_of`) a `batch_argument` names, in its order."""
    payloads: list[dict[str, Any]] = []
    for entry in argument.split(JOBS_APART):
        job_id, *rest = entry.split(FIELDS_APART)
        payload: dict[str, Any] = {"job_id": job_id, "attempt": int(rest[0]) if rest else 1}
        if len(rest) > 1:
            payload["waiting_since"] = float(rest[1])
        payloads.append(payload)
    return payloads


def message_job_ids(task: str, args: Any) -> list[str]:
    """The ids of the jobs a `run_case` or `run_batch` message carries; none when its
    arguments are not jobs (the task says so when it runs)."""
    try:
        if task == RUN_BATCH:
            return [str(payload["job_id"]) for payload in batch_payloads(args[0])]
        return [str(args[0]["job_id"])]
    except (IndexError, KeyError, TypeError, ValueError, AttributeError):
        return []


def keep_stored(client: redis.Redis, pipe: Any, jobs: list[Job]) -> None:
    """Store each job not stored yet, in the sender's pipeline, before its message goes;
    one stored already (by `submit`, `retry`) is left as it is."""
    values = encoded(client, jobs)
    for job in jobs:
        pipe.set(job_key(job.job_id), values[job.job_id], ex=RETENTION_SECONDS, nx=True)


def job_of(client: redis.Redis, payload: dict[str, Any]) -> Job | None:
    """The job a message names, as stored, at the message's attempt and waiting time; None
    when Redis no longer has it (its campaign is complete and compacted, or expired: the
    message is a late duplicate)."""
    return jobs_of(client, [payload])[0]


def jobs_of(client: redis.Redis, payloads: list[dict[str, Any]]) -> list[Job | None]:
    """`job_of` for each of a batch's payloads, the stored ones read in one round trip.

    Before the jobs are held on record: an error here would leave their message taken and
    nobody to send it again while this process lives. Redis is waited for, as to publish."""
    ids = [str(p["job_id"]) for p in payloads]

    def waiting(error: Exception) -> None:
        log.warning("job %s: Redis out of reach to read the job (%s); retrying", ids[0], error)

    read = through_outage(lambda: read_jobs(client, ids), waiting)
    stored = dict(zip(ids, read, strict=True))
    found: list[Job | None] = []
    for payload in payloads:
        job = stored[str(payload["job_id"])]
        update = {"attempt": payload["attempt"], "waiting_since": payload.get("waiting_since")}
        found.append(None if job is None else job.model_copy(update=update))
    return found

"""Sending again the jobs whose worker died: running ones, whose lease ran out;
taken-but-not-running ones (prefetched, waiting for capacity), whose holder is dead; and
the ones lost on the way from the queue to a worker (`bridge.delivery.outstanding`).

Every worker runs a reaper thread; a short Redis lock lets one of them work at a time.
This is how a killed worker's jobs run again within a minute, instead of after the
broker's visibility timeout (which must stay longer than the longest job).

A worker is judged dead by keys that run out: its `alive` key, its leases. They run out
too while Redis is away (restarted, or out of reach), for every worker at once: an
append-only file restores each expiry as a time, passed by then. So after an outage a
reaper judges nothing until the live workers have had time to announce themselves again
(`Outages`): an outage sends nothing again that is still running.
"""

from __future__ import annotations

import logging
import os
import threading
import time
from collections.abc import Callable, Sequence

import redis

from evalrelay.bridge.contract.job import Job
from evalrelay.bridge.contract.names import QUEUES, RUN_BATCH, RUN_CASE
from evalrelay.bridge.contract.stored import read_jobs
from evalrelay.bridge.delivery.holders import ALIVE_SECONDS, take_from_dead
from evalrelay.bridge.delivery.outstanding import UnackedSweep, find_lost, mark_finished
from evalrelay.bridge.done_marks import marked_attempt
from evalrelay.bridge.keys import (
    CANCEL_ENDS,
    cancel_key,
    done_key,
    inflight_key,
    lease_key,
    reaper_lock_key,
    unseen_key,
)
from evalrelay.bridge.lua_scripts import TAKE_EXPIRED

log = logging.getLogger(__name__)

REAP_INTERVAL_SECONDS = float(os.environ.get("EVALRELAY_REAP_SECONDS", "5"))
"""How often workers look for expired leases."""

OUTAGE_MARGIN_SECONDS = 5.0
"""What a reaper waits after an outage beyond an `alive` period: the clients' backoff
between tries (2 s at most) and their reconnection."""

OUTAGE_GRACE_SECONDS = ALIVE_SECONDS + OUTAGE_MARGIN_SECONDS
"""How long after Redis is back (restarted, or out of this reaper's reach) nothing is
reaped: an `alive` period, in which every live worker beats three times and renews each
lease three times (a lease lasts no longer than it), plus the margin."""


class Outages:
    """Tells a reaper whether Redis has answered steadily for `OUTAGE_GRACE_SECONDS`: since
    this reaper last failed to reach it (or waited on it, or was itself stopped, longer
    than a heartbeat), since it restarted (a new `run_id`, a short uptime), or since the
    reaper started, whichever is latest."""

    def __init__(self, interval: float, grace: float = OUTAGE_GRACE_SECONDS) -> None:
        self.grace = grace
        self.longest_gap = interval + ALIVE_SECONDS / 3
        self.run_id: str | None = None
        self.away = False
        self.calm_from: float | None = None
        """When (monotonic) reaping may begin."""
        self.last_look: float | None = None

    def failed(self) -> None:
        self.away = True

    def looked(self) -> None:
        """One turn of the reaper ended (reaping or not)."""
        self.last_look = time.monotonic()

    def calm(self, client: redis.Redis) -> bool:
        """Whether to reap now; the records of jobs found nowhere (`unseen`) start over
        after an outage: their first look may be from before it."""
        asked = time.monotonic()
        run_id, uptime = server_life(client)
        now = time.monotonic()
        restarted = self.run_id is not None and run_id != self.run_id
        # The client's own retries hid an outage, or this process was stopped a while.
        if now - asked > ALIVE_SECONDS / 3 or (
            self.last_look is not None and asked - self.last_look > self.longest_gap
        ):
            self.away = True
        if self.away or restarted:
            log.warning(
                "reaper: Redis is back (%s); nothing is sent again for %.0f s, while live "
                "workers renew what ran out meanwhile",
                "restarted" if restarted else "was out of reach",
                self.grace,
            )
            client.delete(unseen_key())
            self.calm_from = now + self.grace
        elif self.calm_from is None:
            self.calm_from = now + max(0.0, self.grace - uptime)
        self.run_id, self.away = run_id, False
        return now >= self.calm_from


def server_life(client: redis.Redis) -> tuple[str, float]:
    """Redis's `run_id` (new at each start) and uptime in seconds. A Redis that refuses
    INFO (a managed service may) tells neither: a restart is then seen by the errors it
    caused."""
    try:
        info = client.info("server")
    except redis.ResponseError:
        return "", float("inf")
    return str(info.get("run_id", "")), float(info.get("uptime_in_seconds", float("inf")))


LOST_AFTER_MS = int(ALIVE_SECONDS * 1000)
"""How long a job must be found nowhere before it counts as lost: far longer than a
message takes from Redis's list to the worker's record of it."""


def reap_expired(
    client: redis.Redis,
    send: Callable[[Sequence[Job]], object],
    limit: int = 200,
    queues: Sequence[str] = QUEUES,
) -> list[str]:
    """Send again every job whose lease expired, whose holder died, or that was lost;
    returns their ids. Each kind's jobs go in one `send`, which puts API jobs in batches:
    a submitter killed halfway through a large campaign leaves thousands lost at once, and
    one message each would cost every one of them a message's overhead in the worker."""
    expired = client.eval(TAKE_EXPIRED, 1, inflight_key(), limit, lease_key(""))
    resent = _resend(client, send, expired, "lease expired before it finished")
    # A job its dead holder had started still has its lease until it runs out; the
    # lease's own expiry sends that one (in this pass, when it ran out: not twice).
    orphans = [
        j for j in take_from_dead(client) if j not in expired and not client.exists(lease_key(j))
    ]
    resent += _resend(client, send, orphans, "the worker holding it is gone")
    lost = find_lost(client, queues, LOST_AFTER_MS)
    again = [j for j in lost if j not in expired and j not in orphans]
    return resent + _resend(client, send, again, "taken off its queue but held by no worker", lost)


def _resend(
    client: redis.Redis,
    send: Callable[[Sequence[Job]], object],
    job_ids: list[str],
    why: str,
    queues: dict[str, str] | None = None,
) -> list[str]:
    """Send each job again unless it is interrupted, finished or no longer stored; those
    are no longer outstanding. A job of a campaign cancelled for good is sent again: the
    worker that meets it writes its `cancelled` line, which the campaign's end waits for."""
    jobs = read_jobs(client, job_ids)  # one round trip for them all, then one for the marks
    pipe = client.pipeline(transaction=False)
    for job in jobs:
        if job is not None:
            pipe.hget(done_key(job.campaign_id, job.job_id), job.job_id)
            pipe.get(cancel_key(job.campaign_id))
    marks = iter(pipe.execute())
    again: list[Job] = []
    for job_id, job in zip(job_ids, jobs, strict=True):
        if job is None:  # collected `ok`, its campaign compacted, or gone: nothing to send
            log.warning("job %s: to be sent again, but the job is no longer stored", job_id)
            queue = (queues or {}).get(job_id)
            if queue:
                mark_finished(client, queue, job_id)
            continue
        done, cancelled = next(marks), next(marks)
        if (cancelled is not None and not str(cancelled).startswith(CANCEL_ENDS)) or (
            done is not None and marked_attempt(int(done)) >= job.attempt
        ):
            mark_finished(client, job.target.queue, job_id)
            continue
        log.warning("job %s: %s; sending it again", job_id, why)
        again.append(job)
    if again:
        send(again)
    return [job.job_id for job in again]


class Reaper(threading.Thread):
    def __init__(
        self,
        client: redis.Redis,
        send: Callable[[Sequence[Job]], object],
        owner: str,
        interval: float = REAP_INTERVAL_SECONDS,
        stopping: threading.Event | None = None,
    ) -> None:
        super().__init__(daemon=True, name="evalrelay-reaper")
        self.client, self.send, self.owner, self.interval = client, send, owner, interval
        self.stopping = stopping or threading.Event()
        self.unacked = UnackedSweep(RUN_CASE, RUN_BATCH)
        self.outages = Outages(interval)

    def run(self) -> None:
        while not self.stopping.wait(self.interval):
            try:
                if self.outages.calm(self.client) and self.client.set(
                    reaper_lock_key(), self.owner, nx=True, px=int(self.interval * 1000)
                ):
                    reap_expired(self.client, self.send)
                    if dropped := self.unacked.run(self.client, LOST_AFTER_MS):
                        log.info("reaper: dropped %d stale entries of `unacked`", dropped)
            except redis.RedisError as exc:
                self.outages.failed()
                log.warning("reaper: Redis error, retrying: %s", exc)
            except Exception:
                log.exception("reaper: unexpected error; it keeps going")
            self.outages.looked()

    def stop(self) -> None:
        self.stopping.set()

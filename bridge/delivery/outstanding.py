"""Every job sent to a queue and not yet finished, and finding the ones nobody has.

Redis keeps a queued message, and a worker records each message it takes (`holders`);
but between the two, when Redis has handed the message over and the worker has not yet
written it down, a worker killed takes the job with it and nothing else knows. So each
job sent is also written here with the time it was sent, and the reaper looks for the
jobs that are nowhere: sent before the oldest message still on their queue's list (a
list is first in, first out), not held by a worker, not running, and still so a while
later. Those were lost and are sent again; should one not have been, the second
delivery is harmless (the lease and the done mark let one attempt run and publish).

Celery's Redis transport also keeps each message a worker took in its `unacked` hash,
to put back on the queue after the visibility timeout (hours, longer than any job). A
killed worker's entries would sit there until then, so the sweep here drops the ones
no live worker holds; the jobs behind them are covered by this accounting already.
"""

from __future__ import annotations

import base64
import json
from collections.abc import Iterable, Mapping, Sequence
from typing import Any, cast

import redis

from evalrelay.bridge.clock import now_ms
from evalrelay.bridge.contract.job import Job
from evalrelay.bridge.delivery.holders import ALIVE_SECONDS, messages_held
from evalrelay.bridge.delivery.payloads import message_job_ids
from evalrelay.bridge.keys import (
    done_key,
    holders_key,
    lease_key,
    outstanding_key,
    unacked_sweep_key,
    unseen_key,
)
from evalrelay.bridge.lua_scripts import MARK_SENT, UNSEEN

SENT_HEADER = "evalrelay_sent_ms"
"""The message header holding when it was sent, as written in `outstanding`."""

ORDER_SLACK_MS = 10_000
"""Two senders may push their messages in another order than they stamped them."""

UNACKED_KEY, UNACKED_INDEX_KEY = "unacked", "unacked_index"
"""Where Celery's Redis transport (kombu) keeps the messages workers took."""

UNACKED_SWEEP_SECONDS = ALIVE_SECONDS


def mark_sent(pipe: Any, job_ids: Mapping[str, Sequence[str]]) -> None:
    """Record each queue's jobs as sent, before their messages go out. The pipeline's
    reply for this is the time they were recorded at (Redis's, in ms): a reaper on any
    host compares it with Redis's time, and with the `SENT_HEADER` of other messages."""
    queues = [queue for queue, ids in job_ids.items() if ids]
    if queues:
        counted = [item for q in queues for item in (len(job_ids[q]), *job_ids[q])]
        pipe.eval(MARK_SENT, len(queues), *map(outstanding_key, queues), *counted)


def ids_by_queue(jobs: Iterable[Job]) -> dict[str, list[str]]:
    """The jobs' ids, by the queue each goes to, for `mark_sent`."""
    by_queue: dict[str, list[str]] = {}
    for job in jobs:
        by_queue.setdefault(job.target.queue, []).append(job.job_id)
    return by_queue


def mark_finished(pipe: Any, queue: str, job_id: str) -> None:
    pipe.zrem(outstanding_key(queue), job_id)


def not_sent(client: redis.Redis, jobs: Sequence[Job]) -> list[Job]:
    """The jobs neither outstanding nor done: never sent, as far as Redis knows."""
    pipe = client.pipeline(transaction=False)
    for job in jobs:
        pipe.zscore(outstanding_key(job.target.queue), job.job_id)
        pipe.hexists(done_key(job.campaign_id, job.job_id), job.job_id)
    replies = pipe.execute()
    return [
        job
        for job, score, done in zip(jobs, replies[::2], replies[1::2], strict=True)
        if score is None and not done
    ]


def oldest_queued_ms(client: redis.Redis, queue: str, now: int) -> int | None:
    """When the next message the queue's list hands out was sent; None if the list is empty.

    A message without the header (sent by something else) counts as sent `now`, which
    keeps every job from looking lost until it has left the list.
    """
    raw = client.lindex(queue, -1)
    if raw is None:
        return None
    try:
        return int(json.loads(raw)["headers"][SENT_HEADER])
    except (ValueError, KeyError, TypeError):
        return now


def find_lost(
    client: redis.Redis,
    queues: Iterable[str],
    grace_ms: int,
    limit: int = 1000,
    slack_ms: int = ORDER_SLACK_MS,
) -> dict[str, str]:
    """The jobs found nowhere now and at an earlier look at least `grace_ms` ago, each with
    its queue. A job seen somewhere in between starts over. Every time here is Redis's: the
    sent times were written on it, and the earlier look may have been made on another host."""
    now = now_ms(client)
    unseen: dict[str, str] = {}
    for queue in queues:
        oldest = oldest_queued_ms(client, queue, now)
        before = now if oldest is None else oldest - slack_ms
        found = client.eval(
            UNSEEN, 2, outstanding_key(queue), holders_key(), before, lease_key(""), limit
        )
        unseen |= dict.fromkeys(cast(list[str], found), queue)
    first_seen = {k: int(v) for k, v in cast(dict[str, str], client.hgetall(unseen_key())).items()}
    lost = {j: q for j, q in unseen.items() if j in first_seen and now - first_seen[j] >= grace_ms}
    pipe = client.pipeline(transaction=False)
    if stale := [j for j in first_seen if j not in unseen or j in lost]:
        pipe.hdel(unseen_key(), *stale)
    if new := [j for j in unseen if j not in first_seen]:
        pipe.hset(unseen_key(), mapping=dict.fromkeys(new, str(now)))
    pipe.execute()
    return lost


class UnackedSweep:
    """Drops from the broker's `unacked` hash our messages that no live worker holds.

    An entry never changes once written, so each one's message id is read once. Entries
    of other tasks than ours are left alone. Kombu writes an entry's time with the taking
    host's clock (not ours to change); a host running behind makes its entries look old at
    once, which only lets the sweep look at them sooner: one a live worker holds is kept.
    """

    def __init__(self, *task_names: str) -> None:
        self.task_names = task_names
        self.messages: dict[str, tuple[str, list[str]] | None] = {}

    def run(self, client: redis.Redis, grace_ms: int) -> int:
        """Sweep unless another sweep ran lately; returns how many entries it dropped."""
        if not client.set(unacked_sweep_key(), "1", nx=True, px=int(UNACKED_SWEEP_SECONDS * 1000)):
            return 0
        old = cast(
            list[str],
            client.zrangebyscore(UNACKED_INDEX_KEY, "-inf", (now_ms(client) - grace_ms) / 1000),
        )
        self._learn(client, [tag for tag in old if tag not in self.messages])
        ours = {tag: m for tag in old if (m := self.messages[tag]) is not None}
        job_ids = [job_id for _, jobs in ours.values() for job_id in jobs]
        holding = dict(zip(job_ids, messages_held(client, job_ids), strict=True))
        stale = [
            tag
            for tag, (message_id, jobs) in ours.items()
            if not any(holding[job_id] == message_id for job_id in jobs)
        ]
        if stale:
            pipe = client.pipeline(transaction=False)
            pipe.zrem(UNACKED_INDEX_KEY, *stale)
            pipe.hdel(UNACKED_KEY, *stale)
            pipe.execute()
        self.messages = {tag: self.messages[tag] for tag in old if tag not in stale}
        return len(stale)

    def _learn(self, client: redis.Redis, tags: list[str]) -> None:
        """Each entry's message id and the jobs it carries, or None when it is not a message
        of our tasks."""
        raws = cast(list[str | None], client.hmget(UNACKED_KEY, tags)) if tags else []
        for tag, raw in zip(tags, raws, strict=True):
            try:
                message = json.loads(raw)[0] if raw else {"headers": {}}
                headers = message["headers"]
                if headers.get("task") not in self.task_names:
                    self.messages[tag] = None
                    continue
                jobs = carried_jobs(message)  # none: not jobs, which the task says itself
                self.messages[tag] = (str(headers["id"]), jobs) if jobs else None
            except (ValueError, KeyError, TypeError, IndexError, AttributeError):
                self.messages[tag] = None


def carried_jobs(message: Mapping[str, Any]) -> list[str]:
    """The ids of the jobs a message as kombu's Redis transport keeps it carries (on a
    queue's list, or in `unacked`): its body is JSON in base64 (its `body_encoding`)."""
    args = json.loads(base64.b64decode(message["body"]))[0]
    return message_job_ids(str(message["headers"].get("task")), args)

"""Steering a running campaign: pause it, let it go on, cancel it, each change on record.

A paused campaign keeps everything it has. Workers check the pause in the same round trip
that would take a job's lease (`bridge.delivery.lease`): a job they meet then is not run, and is
taken off the jobs sent (`outstanding`) in that same step, so it counts as never sent.
A job that had begun but still waits for its call (a `max_concurrency` slot, a rate
limit, a retry's back-off) is checked again right before the call starts
(`bridge.queue.admission`) and goes back to its queue, to be met there the same way: no
call starts once the command has returned. Calls under way finish and are collected.
`unpause` lifts the pause first and only then sends again the jobs that are nowhere (no
result, not queued, not running): a job a worker skipped before the pause was lifted is
among them, one still queued runs as it is, so none is lost and none runs twice.

A cancel ends the campaign: every job not started gets a `cancelled` line, written by
the worker that meets it (the jobs a pause left nowhere are sent again for that), so
`run` and the collector finish. A finished campaign cannot be steered.
"""

from __future__ import annotations

import getpass
import socket
import time
from collections.abc import Sequence
from typing import cast

import redis
from pydantic import BaseModel, ConfigDict

from evalrelay.bridge.contract.campaign_state import JOB_TTL_SECONDS, cancel, cancel_ends, uncancel
from evalrelay.bridge.contract.job import Job
from evalrelay.bridge.delivery.outstanding import not_sent
from evalrelay.bridge.errors import EvalrelayError
from evalrelay.bridge.keys import audit_key, paused_key
from evalrelay.bridge.queue.campaigns import missing_jobs, progress

AUDIT_LENGTH = 1000
"""Changes kept per campaign, the oldest dropped first."""


class Paused(BaseModel):
    """Why a campaign is paused, since when (Unix seconds) and by whom."""

    model_config = ConfigDict(extra="forbid")

    reason: str
    at: float
    by: str


class Change(BaseModel):
    """One line of a campaign's audit: an action, by whom, when, and what it did."""

    model_config = ConfigDict(extra="forbid")

    action: str
    at: float
    by: str
    detail: str = ""


def who() -> str:
    """The user and host making a change, as the audit names them."""
    return f"{getpass.getuser()}@{socket.gethostname()}"


def record(client: redis.Redis, campaign_id: str, change: Change) -> None:
    fields = {k: str(v) for k, v in change.model_dump().items()}
    client.xadd(audit_key(campaign_id), fields, maxlen=AUDIT_LENGTH, approximate=True)  # type: ignore[arg-type]
    client.expire(audit_key(campaign_id), JOB_TTL_SECONDS)


def audit(client: redis.Redis, campaign_id: str, last: int = 10) -> list[Change]:
    """The campaign's `last` changes, oldest first."""
    entries = cast(
        list[tuple[str, dict[str, str]]], client.xrevrange(audit_key(campaign_id), count=last)
    )
    return [Change.model_validate(fields) for _, fields in reversed(entries)]


def pause(client: redis.Redis, campaign_id: str, reason: str, by: str) -> bool:
    """Pause the campaign; False when it was paused already (the first reason stays)."""
    state = Paused(reason=reason, at=time.time(), by=by)
    done = bool(client.set(paused_key(campaign_id), state.model_dump_json(), nx=True))
    if done:
        client.expire(paused_key(campaign_id), JOB_TTL_SECONDS)
        record(client, campaign_id, Change(action="pause", at=state.at, by=by, detail=reason))
    return done


def paused(client: redis.Redis, campaign_id: str) -> Paused | None:
    raw = client.get(paused_key(campaign_id))
    return Paused.model_validate_json(raw) if raw else None


def paused_many(client: redis.Redis, campaign_ids: Sequence[str]) -> set[str]:
    """The campaigns of `campaign_ids` that are paused, in one round trip."""
    pipe = client.pipeline(transaction=False)
    for campaign_id in campaign_ids:
        pipe.exists(paused_key(campaign_id))
    return {c for c, found in zip(campaign_ids, pipe.execute(), strict=True) if found}


def pauses(client: redis.Redis, campaign_ids: Sequence[str]) -> dict[str, Paused]:
    """The paused campaigns of `campaign_ids` and why, in one round trip."""
    if not campaign_ids:
        return {}
    raws = cast(list[str | None], client.mget([paused_key(c) for c in campaign_ids]))
    return {
        c: Paused.model_validate_json(raw) for c, raw in zip(campaign_ids, raws, strict=True) if raw
    }


def unpause(client: redis.Redis, campaign_id: str, by: str) -> list[Job]:
    """Lift the pause (and a cancel), then return the jobs to send again: those with no
    result that are neither queued, running nor done. Lifting first matters: a worker
    that skips a job does so atomically with taking it off the jobs sent, before or after
    the lift, so each skipped job is either found here or was never skipped."""
    client.delete(paused_key(campaign_id))
    uncancel(client, campaign_id)
    again = not_sent(client, missing_jobs(client, campaign_id))
    detail = f"{len(again)} jobs sent again"
    record(client, campaign_id, Change(action="unpause", at=time.time(), by=by, detail=detail))
    return again


def cancel_campaign(client: redis.Redis, campaign_id: str, by: str) -> list[Job]:
    """End the campaign: workers start none of its jobs from now on and write a `cancelled`
    line for each they meet. Returns the jobs to send for that: those no queue holds (left
    by a pause), which no worker would otherwise meet."""
    cancel(client, campaign_id, ends=True)
    again = not_sent(client, missing_jobs(client, campaign_id))
    record(client, campaign_id, Change(action="cancel", at=time.time(), by=by))
    return again


def refuse_finished(client: redis.Redis, campaign_id: str, action: str) -> None:
    """Raise, saying so, when the campaign has every line: there is nothing to steer."""
    done = progress(client, campaign_id)
    if done.finished:
        ended = " (it was cancelled)" if cancel_ends(client, campaign_id) else ""
        raise EvalrelayError(
            f"campaign {campaign_id} is finished{ended}: all {done.total} jobs have their "
            f"result, so there is nothing to {action}; `evalrelay retry {campaign_id} --status "
            "STATUSES` runs jobs again"
        )

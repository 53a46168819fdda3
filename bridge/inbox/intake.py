"""Records of dropped files, by content, so no file starts two campaigns by accident.

A drop's identity is the hash of its bytes and the inbox folder it was dropped in. A
watcher takes a drop under a short lock, renewed while it works; the drop's record names
its campaign before the first job is sent. So the same content dropped again is
recognised, also by a second watcher on another machine, and a watcher killed in the
middle of a submission leaves a record from which the next one finishes the same
campaign, sending only what was not sent.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Literal

import redis
from pydantic import BaseModel

from evalrelay.bridge.keys import intake_key, intake_lock_key
from evalrelay.bridge.lua_scripts import RENEW_INTAKE_LOCK, release_lock

LOCK_SECONDS = 30
"""How long a drop stays taken by a watcher that stopped renewing its lock (it died)."""

RECORD_TTL_SECONDS = 90 * 24 * 3600


class IntakeRecord(BaseModel):
    state: Literal["submitting", "submitted", "queued"]
    """`submitting` from before the first job is sent until the last is."""
    watcher: str
    path: str
    """Where the drop was found, relative to the inbox."""
    campaign_id: str
    queued_path: str | None = None


def drop_identity(data: bytes, folder_target: str | None) -> str:
    return hashlib.sha256((folder_target or "").encode() + b"\0" + data).hexdigest()


class Intake:
    """A watcher's side of the drops' locks and records. Drops that settled together are
    locked, renewed, recorded and unlocked together, one pipeline each, so a burst costs a
    few round trips per batch rather than a dozen per file."""

    def __init__(self, client: redis.Redis, watcher: str) -> None:
        self.client = client
        self.watcher = watcher

    def lock_all(self, identities: Sequence[str]) -> dict[str, IntakeRecord | None]:
        """Take every drop this watcher can: the ones taken, each with its record (None
        for content never seen). A drop another watcher has is left out."""
        pipe = self.client.pipeline(transaction=False)
        for identity in identities:
            pipe.set(intake_lock_key(identity), self.watcher, nx=True, ex=LOCK_SECONDS)
            pipe.get(intake_key(identity))  # after our lock: no watcher writes it meanwhile
        replies = pipe.execute()
        return {
            identity: _parsed(raw)
            for identity, locked, raw in zip(identities, replies[::2], replies[1::2], strict=True)
            if locked
        }

    def renew_all(self, identities: Iterable[str]) -> None:
        pipe = self.client.pipeline(transaction=False)
        for identity in identities:
            pipe.eval(RENEW_INTAKE_LOCK, 1, intake_lock_key(identity), self.watcher, LOCK_SECONDS)
        pipe.execute()

    def unlock_all(self, identities: Iterable[str]) -> None:
        pipe = self.client.pipeline(transaction=False)
        for identity in identities:
            release_lock(pipe, intake_lock_key(identity), self.watcher)
        pipe.execute()

    def record(self, identity: str) -> IntakeRecord | None:
        return _parsed(self.client.get(intake_key(identity)))

    def create_all(self, records: dict[str, IntakeRecord]) -> set[str]:
        """Write the drops' first records; the identities written. One left out already
        had a record (another watcher's lock lapsed while it worked: finish what it
        started rather than start again)."""
        pipe = self.client.pipeline(transaction=False)
        for identity, record in records.items():
            pipe.set(intake_key(identity), record.model_dump_json(), nx=True, ex=RECORD_TTL_SECONDS)
        return {i for i, created in zip(records, pipe.execute(), strict=True) if created}

    def update(
        self, identity: str, record: IntakeRecord, pipeline: redis.client.Pipeline | None = None
    ) -> None:
        target = pipeline if pipeline is not None else self.client  # an empty pipeline is falsy
        target.set(intake_key(identity), record.model_dump_json(), ex=RECORD_TTL_SECONDS)

    def forget(self, identity: str, pipeline: redis.client.Pipeline | None = None) -> None:
        """An invalid drop leaves no record: fixed or not, dropping it again checks it again."""
        (pipeline if pipeline is not None else self.client).delete(intake_key(identity))

    def new_record(self, campaign_id: str, path: Path) -> IntakeRecord:
        return IntakeRecord(
            state="submitting", watcher=self.watcher, path=path.as_posix(), campaign_id=campaign_id
        )


def _parsed(raw: str | bytes | None) -> IntakeRecord | None:
    if not raw:
        return None
    return IntakeRecord.model_validate_json(raw)

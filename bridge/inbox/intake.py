"""Claims on dropped files, by content, so no file starts two campaigns by accident.

A drop's identity is the hash of its bytes and the inbox folder it was dropped in. The
first watcher to claim it (with a TTL, in case it dies) submits it; the record then
remembers the campaign, so the same content dropped again is recognised, also by a
second watcher on another machine, and a restarted watcher finishes what it began.
"""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import Literal

import redis
from pydantic import BaseModel

from bridge.keys import intake_key

CLAIM_SECONDS = 120
"""How long a claim protects a drop that is being submitted; a dead watcher's claim lapses."""

RECORD_TTL_SECONDS = 90 * 24 * 3600

_RECLAIM = """
if redis.call('GET', KEYS[1]) == ARGV[1] then
  redis.call('SET', KEYS[1], ARGV[2], 'EX', ARGV[3])
  return 1
end
return 0
"""


class IntakeRecord(BaseModel):
    state: Literal["claimed", "submitted", "queued", "done"]
    watcher: str
    path: str
    """Where the drop was found, relative to the inbox."""
    campaign_id: str | None = None
    queued_path: str | None = None


def drop_identity(data: bytes, folder_target: str | None) -> str:
    return hashlib.sha256((folder_target or "").encode() + b"\0" + data).hexdigest()


class Intake:
    def __init__(self, client: redis.Redis, watcher: str) -> None:
        self.client = client
        self.watcher = watcher

    def claim(self, identity: str, path: Path) -> IntakeRecord | None:
        """A fresh claim, or None when the drop already has a record (see `record`)."""
        record = IntakeRecord(state="claimed", watcher=self.watcher, path=path.as_posix())
        if self.client.set(
            intake_key(identity), record.model_dump_json(), nx=True, ex=CLAIM_SECONDS
        ):
            return record
        return None

    def reclaim(self, identity: str, old: IntakeRecord, path: Path) -> IntakeRecord | None:
        """Take over a drop's record (to run it again); only one watcher succeeds."""
        record = IntakeRecord(state="claimed", watcher=self.watcher, path=path.as_posix())
        swapped = self.client.eval(
            _RECLAIM,
            1,
            intake_key(identity),
            old.model_dump_json(),
            record.model_dump_json(),
            CLAIM_SECONDS,
        )
        return record if swapped else None

    def record(self, identity: str) -> IntakeRecord | None:
        raw = self.client.get(intake_key(identity))
        return IntakeRecord.model_validate_json(raw) if raw else None

    def update(self, identity: str, record: IntakeRecord) -> None:
        self.client.set(intake_key(identity), record.model_dump_json(), ex=RECORD_TTL_SECONDS)

    def forget(self, identity: str) -> None:
        """An invalid drop leaves no record: fixed or not, dropping it again checks it again."""
        self.client.delete(intake_key(identity))

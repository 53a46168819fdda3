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
from pathlib import Path
from typing import Literal

import redis
from pydantic import BaseModel

from bridge.keys import intake_key, intake_lock_key

LOCK_SECONDS = 30
"""How long a drop stays taken by a watcher that stopped renewing its lock (it died)."""

RECORD_TTL_SECONDS = 90 * 24 * 3600

_RENEW = """
if redis.call('GET', KEYS[1]) == ARGV[1] then
  return redis.call('SET', KEYS[1], ARGV[1], 'EX', ARGV[2])
end
return false
"""

_UNLOCK = """
if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('DEL', KEYS[1]) end
return 0
"""


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
    def __init__(self, client: redis.Redis, watcher: str) -> None:
        self.client = client
        self.watcher = watcher

    def lock(self, identity: str) -> bool:
        """Take the drop for this watcher; False while another watcher has it."""
        return bool(
            self.client.set(intake_lock_key(identity), self.watcher, nx=True, ex=LOCK_SECONDS)
        )

    def renew(self, identity: str) -> None:
        self.client.eval(_RENEW, 1, intake_lock_key(identity), self.watcher, LOCK_SECONDS)

    def unlock(self, identity: str) -> None:
        self.client.eval(_UNLOCK, 1, intake_lock_key(identity), self.watcher)

    def record(self, identity: str) -> IntakeRecord | None:
        raw = self.client.get(intake_key(identity))
        if not raw:
            return None
        try:
            return IntakeRecord.model_validate_json(raw)
        except ValueError:  # written by an older evalrelay: a claim that has lapsed
            return None

    def create(self, identity: str, record: IntakeRecord) -> bool:
        """Write the drop's first record; False when one exists (another watcher's lock
        lapsed while it worked: finish what it started rather than start again)."""
        raw = record.model_dump_json()
        return bool(self.client.set(intake_key(identity), raw, nx=True, ex=RECORD_TTL_SECONDS))

    def update(self, identity: str, record: IntakeRecord) -> None:
        self.client.set(intake_key(identity), record.model_dump_json(), ex=RECORD_TTL_SECONDS)

    def forget(self, identity: str) -> None:
        """An invalid drop leaves no record: fixed or not, dropping it again checks it again."""
        self.client.delete(intake_key(identity))

    def new_record(self, campaign_id: str, path: Path) -> IntakeRecord:
        return IntakeRecord(
            state="submitting", watcher=self.watcher, path=path.as_posix(), campaign_id=campaign_id
        )

"""What collectors that cannot write tell Redis, for `status` and `serve`."""

from __future__ import annotations

import errno
import json
import time

import redis

from evalrelay.bridge.keys import cannot_write_key
from evalrelay.bridge.results.write_errors import can_write, cannot_write, describe, write_errors


def test_an_error_is_said_until_the_collector_writes_again(client: redis.Redis) -> None:
    error = describe(OSError(errno.ENOSPC, "No space left on device"))
    assert error == "No space left on device (ENOSPC)"
    cannot_write(client, "collect@h", "camp", "/r/camp.jsonl", error, since=time.time() - 60)
    (said,) = write_errors(client)
    assert str(said).startswith("collector collect@h: cannot write ")
    assert ":/r/camp.jsonl: No space left on device (ENOSPC) since " in str(said)
    can_write(client, "collect@h", "camp")
    assert write_errors(client) == []


def test_an_error_no_collector_says_again_is_not_shown(client: redis.Redis) -> None:
    """A collector killed while it could not write leaves its entry behind."""
    said = cannot_write(client, "gone@h", "camp", "/r/camp.jsonl", "Input/output error (EIO)", 0)
    stale = said.model_copy(update={"seen": time.time() - 3600})
    client.hset(cannot_write_key(), "gone@h camp", json.dumps(stale.model_dump()))
    assert write_errors(client) == []

"""Putting a result on its campaign's stream, at most once per job attempt."""

from __future__ import annotations

import redis

from bridge.keys import done_key, results_stream_key
from bridge.results import Result

DONE_TTL_SECONDS = 30 * 24 * 3600

_PUBLISH = """
local done = tonumber(redis.call('GET', KEYS[1]) or '0')
if done >= tonumber(ARGV[1]) then return 0 end
redis.call('XADD', KEYS[2], '*', 'job_id', ARGV[2], 'result', ARGV[3])
redis.call('SET', KEYS[1], ARGV[1], 'EX', ARGV[4])
return 1
"""


def publish(client: redis.Redis, result: Result) -> bool:
    """Append the result unless this attempt (or a later one) is already published."""
    added = client.eval(
        _PUBLISH,
        2,
        done_key(result.job_id),
        results_stream_key(result.campaign_id),
        result.attempt,
        result.job_id,
        result.model_dump_json(),
        DONE_TTL_SECONDS,
    )
    return bool(added)


def is_done(client: redis.Redis, job_id: str, attempt: int) -> bool:
    done = client.get(done_key(job_id))
    return done is not None and int(done) >= attempt

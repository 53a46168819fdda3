"""Putting a result on its campaign's stream, at most once per job attempt, masked of the
secrets this worker holds: what reaches the stream reaches the JSONL, the reports and
Redis's own files."""

from __future__ import annotations

import logging
from dataclasses import dataclass

import redis

from bridge.keys import (
    compacted_key,
    done_key,
    holders_key,
    inflight_key,
    lease_key,
    outstanding_key,
    paid_again_key,
    results_stream_key,
    tallied_targets_key,
    target_tally_key,
)
from bridge.masking import masked_json
from bridge.queue.connection import through_outage
from bridge.queue.holders import LET_GO_LUA
from bridge.results.result import Result

log = logging.getLogger(__name__)

DONE_TTL_SECONDS = 30 * 24 * 3600

PUBLISHED, ALREADY_PUBLISHED, LATE_COPY = "published", "already published", "late copy"
"""What a publication did: appended the result; found this attempt (or a later one) in the
stream; or found the campaign complete and compacted, its file whole (a late copy, dropped)."""

_OUTCOMES = {1: PUBLISHED, 0: ALREADY_PUBLISHED, 2: LATE_COPY}

# Legend of `PUBLISH` (keys and arguments built by `Publication.of`):
#   KEYS[1]   the job's done mark (`done_key`): the attempt that finished it
#   KEYS[2]   the campaign's results stream (`results_stream_key`)
#   KEYS[3]   the job's lease (`lease_key`)
#   KEYS[4]   the in-flight sorted set (`inflight_key`)
#   KEYS[5]   the queue's sent-jobs sorted set (`outstanding_key`)
#   KEYS[6]   the holders hash (`holders_key`)
#   KEYS[7]   the target's tally hash (`target_tally_key`): count per status, `retries`,
#             `cost_usd`
#   KEYS[8]   the set of targets with a tally (`tallied_targets_key`)
#   KEYS[9]   the campaign's compacted mark (`compacted_key`)
#   KEYS[10]  the campaign's calls-paid-again hash (`paid_again_key`): count per reason
#   ARGV[1]   the result's attempt number
#   ARGV[2]   the job id
#   ARGV[3]   the result, JSON with its secrets masked
#   ARGV[4]   the done mark's (and the paid-again hash's) time to live, seconds
#   ARGV[5]   the worker's lease token, or '' for none to release
#   ARGV[6]   the message id the worker let go of, or '' for none
#   ARGV[7]   the target's name
#   ARGV[8]   the result's status
#   ARGV[9]   the result's cost in USD, or '' when unknown
#   ARGV[10]  '1' when making the result called the target (and it is no regrade), else '0'
# Returns 1 (published), 0 (already published) or 2 (late copy): `_OUTCOMES`.
PUBLISH = (
    LET_GO_LUA
    + """
local added, paid_again = 0, 'duplicate'
if redis.call('EXISTS', KEYS[9]) == 1 then
  added, paid_again = 2, 'late copy'
  redis.call('ZREM', KEYS[5], ARGV[2])
elseif tonumber(redis.call('GET', KEYS[1]) or '0') < tonumber(ARGV[1]) then
  paid_again = tonumber(ARGV[1]) > 1 and 'retry' or nil
  redis.call('XADD', KEYS[2], '*', 'job_id', ARGV[2], 'result', ARGV[3])
  redis.call('SET', KEYS[1], ARGV[1], 'EX', ARGV[4])
  added = 1
  redis.call('ZREM', KEYS[5], ARGV[2])
  redis.call('SADD', KEYS[8], ARGV[7])
  redis.call('HINCRBY', KEYS[7], ARGV[8], 1)
  if tonumber(ARGV[1]) > 1 then redis.call('HINCRBY', KEYS[7], 'retries', 1) end
  if ARGV[9] ~= '' then redis.call('HINCRBYFLOAT', KEYS[7], 'cost_usd', ARGV[9]) end
end
if ARGV[5] ~= '' then
  local holder = redis.call('GET', KEYS[3])
  if holder == ARGV[5] or not holder then
    redis.call('DEL', KEYS[3])
    redis.call('ZREM', KEYS[4], ARGV[2])
  end
end
if ARGV[6] ~= '' then let_go(KEYS[6], ARGV[2], ARGV[6]) end
if paid_again and ARGV[10] == '1' then
  redis.call('HINCRBY', KEYS[10], paid_again, 1)
  if redis.call('TTL', KEYS[10]) < 0 then redis.call('EXPIRE', KEYS[10], ARGV[4]) end
end
return added
"""
)
"""One round trip: append the result unless already there (and the job is no longer
outstanding, and the target's tally counts it), release the lease if ours (or run out),
and forget that this worker holds the message. A result of a compacted campaign is a late
copy: it reaches neither the stream (nobody reads it any more) nor the tally, and leaves
no `done` mark behind. A result that called its target (`ARGV[10]`) and is not its job's
first is counted in the campaign's calls paid again (`bridge.queue.paid`), by why."""


def publish(
    client: redis.Redis,
    result: Result,
    queue: str,
    lease_token: str = "",
    message_id: str = "",
    called: bool = True,
) -> str:
    """Append the result unless this attempt (or a later one) is already published, or its
    campaign is compacted; say which (`PUBLISHED`...). In the same round trip, forget that
    the worker holds `message_id` (`bridge.queue.holders`). Tried again while Redis is out
    of reach: the script is safe to repeat."""
    call = Publication.of(result, queue, lease_token, message_id, called)

    added = through_outage(
        lambda: client.eval(PUBLISH, len(call.keys), *call.keys, *call.args), call.waiting
    )
    return outcome_of(added)


def outcome_of(reply: object) -> str:
    """`PUBLISH`'s reply in words."""
    return _OUTCOMES[int(str(reply))]


@dataclass(frozen=True)
class Publication:
    """The keys and arguments of one `PUBLISH`, to run alone or in a pipeline with others'."""

    job_id: str
    keys: tuple[str, ...]
    args: tuple[str | int, ...]

    @classmethod
    def of(
        cls,
        result: Result,
        queue: str,
        lease_token: str = "",
        message_id: str = "",
        called: bool = True,
    ) -> Publication:
        """`called`: whether making the result called the target (a job that never started
        did not; nor does a regrade, which grades a recorded answer)."""
        keys = (
            done_key(result.job_id),
            results_stream_key(result.campaign_id),
            lease_key(result.job_id),
            inflight_key(),
            outstanding_key(queue),
            holders_key(),
            target_tally_key(result.target),
            tallied_targets_key(),
            compacted_key(result.campaign_id),
            paid_again_key(result.campaign_id),
        )
        args = (
            result.attempt,
            result.job_id,
            masked_json(result),
            DONE_TTL_SECONDS,
            lease_token,
            message_id,
            result.target,
            result.status.value,
            repr(result.cost.usd) if result.cost else "",
            "1" if called and result.regraded_from is None else "0",
        )
        return cls(result.job_id, keys, args)

    def waiting(self, error: Exception) -> None:
        log.warning("job %s: Redis out of reach to publish its result (%s); retrying",
                    self.job_id, error)  # fmt: skip

"""Every Lua script evalrelay runs on Redis, each under a legend of its `KEYS[n]` and
`ARGV[n]` and of what it returns.

A script is one atomic step on Redis: what it reads and what it writes cannot be split
by another client, and it costs one round trip. They live in one module so that a reader
finds each key a script touches in one place, and so that a script two callers need (the
release of a lock taken with a token) is written once. Pieces that several scripts share
(`NOW_MS_LUA`, `LET_GO_LUA`, `FORGET_GONE_LUA`) are Lua functions prepended to them.
The callers pass keys and arguments through the small wrappers below where one exists,
by name.
"""

from __future__ import annotations

from typing import Any

import redis
from redis.client import Pipeline

from evalrelay.bridge.clock import NOW_MS_LUA
from evalrelay.bridge.done_marks import DONE_ATTEMPT_LUA

# Lua prelude, no KEYS or ARGV of its own: defines `let_go(holders, job_id, message_id)`,
# which deletes `job_id` from the `holders` hash when its record (`<message_id> <process>`)
# names `message_id`, and returns 1 if it did, 0 if not.
LET_GO_LUA = """
local function let_go(holders, job_id, message_id)
  local held = redis.call('HGET', holders, job_id)
  if held and string.sub(held, 1, #message_id + 1) == message_id .. ' ' then
    return redis.call('HDEL', holders, job_id)
  end
  return 0
end
"""
"""Forget the holder only if it is still this message (a newer one may hold the job now);
a Lua function, for the scripts that let go of a message as they do something else."""


#   KEYS[1]  the holders hash (`holders_key()`): job id -> "<message id> <process>"
#   ARGV[1]  the job id
#   ARGV[2]  the message id the caller let go of
# Returns 1 if the holder was forgotten, 0 if a newer message holds the job.
LET_GO = LET_GO_LUA + "return let_go(KEYS[1], ARGV[1], ARGV[2])"


# Take a job off the holders hash only if its record is still the one the caller read,
# so that of several reapers reading the same dead holder, one takes the job.
#   KEYS[1]  the holders hash (`holders_key()`)
#   ARGV[1]  the job id
#   ARGV[2]  the record the caller read ("<message id> <process>")
# Returns 1 if this caller took it, 0 if the record changed or is gone.
TAKE_HOLD = """
if redis.call('HGET', KEYS[1], ARGV[1]) == ARGV[2] then
  return redis.call('HDEL', KEYS[1], ARGV[1])
end
return 0
"""


# Lua prelude, no KEYS or ARGV of its own: defines `forget_gone(key, now, gone_seconds)`,
# which deletes from the heartbeat hash `key` every field whose JSON `seen` (seconds) is
# more than `gone_seconds` before `now`, or cannot be read; returns nothing.
FORGET_GONE_LUA = """
local function forget_gone(key, now, gone_seconds)
  local entries = redis.call('HGETALL', key)
  for i = 1, #entries, 2 do
    local ok, info = pcall(cjson.decode, entries[i + 1])
    local seen = ok and type(info) == 'table' and tonumber(info.seen) or 0
    if now - seen > gone_seconds then redis.call('HDEL', key, entries[i]) end
  end
end
"""


#   KEYS[1]  a heartbeat hash (`workers`, `watchers`): process name -> JSON report
#   ARGV[1]  `GONE_SECONDS`
# Returns nothing.
FORGET_GONE = (
    NOW_MS_LUA + FORGET_GONE_LUA + "forget_gone(KEYS[1], now_ms() / 1000, tonumber(ARGV[1]))"
)


#   KEYS[1]  a heartbeat hash (`workers`, `watchers`): process name -> JSON report
#   ARGV[1]  the process name (the field written)
#   ARGV[2]  its report, a JSON object without `seen` (`seen` is put first, on Redis's clock)
#   ARGV[3]  `GONE_SECONDS`
# Returns nothing.
BEAT = (
    NOW_MS_LUA
    + FORGET_GONE_LUA
    + """
local now = now_ms() / 1000
local rest = string.sub(ARGV[2], 2)
if rest ~= '}' then rest = ', ' .. rest end
redis.call('HSET', KEYS[1], ARGV[1], '{"seen": ' .. string.format('%.3f', now) .. rest)
forget_gone(KEYS[1], now, tonumber(ARGV[3]))
"""
)
"""Write a process's report with `seen` set to Redis's time, and drop the gone ones."""


# Legend of `BEGIN_LEASE` (keys and arguments built by `LeaseBegin.of`):
#   KEYS[1]  the campaign's cancel mark (`cancel_key`)
#   KEYS[2]  the hash of the job's done mark (`done_key`), field job id: the attempt that
#            finished it, and its copy
#   KEYS[3]  the job's lease (`lease_key`): the token of the worker running it
#   KEYS[4]  the in-flight sorted set (`inflight_key`): job id scored by lease expiry, ms
#   KEYS[5]  the holders hash (`holders_key`): job id -> "<message id> <process>"
#   KEYS[6]  the campaign's pause mark (`paused_key`)
#   KEYS[7]  the queue's sent-jobs sorted set (`outstanding_key`), or '' for none
#   KEYS[8]  the campaign's compacted mark (`compacted_key`)
#   ARGV[1]  this attempt's number
#   ARGV[2]  this worker's lease token
#   ARGV[3]  the lease's length, ms
#   ARGV[4]  the job id
#   ARGV[5]  the holder record to write, or '' when it is written elsewhere
# Returns one of 'leased', 'late-copy', 'cancelled', 'paused', 'duplicate',
# 'running-elsewhere'.
BEGIN_LEASE = (
    NOW_MS_LUA
    + DONE_ATTEMPT_LUA
    + """
if redis.call('EXISTS', KEYS[8]) == 1 then
  if KEYS[7] ~= '' then redis.call('ZREM', KEYS[7], ARGV[4]) end
  return 'late-copy'
end
if redis.call('EXISTS', KEYS[1]) == 1 then
  if KEYS[7] ~= '' then redis.call('ZREM', KEYS[7], ARGV[4]) end
  return 'cancelled'
end
if redis.call('EXISTS', KEYS[6]) == 1 then
  if KEYS[7] ~= '' then redis.call('ZREM', KEYS[7], ARGV[4]) end
  return 'paused'
end
if done_attempt(redis.call('HGET', KEYS[2], ARGV[4])) >= tonumber(ARGV[1]) then
  return 'duplicate'
end
local holder = redis.call('GET', KEYS[3])
if holder and holder ~= ARGV[2] then return 'running-elsewhere' end
if not holder and redis.call('ZSCORE', KEYS[4], ARGV[4]) then return 'running-elsewhere' end
redis.call('SET', KEYS[3], ARGV[2], 'PX', ARGV[3])
redis.call('ZADD', KEYS[4], now_ms() + tonumber(ARGV[3]), ARGV[4])
if ARGV[5] ~= '' then redis.call('HSET', KEYS[5], ARGV[4], ARGV[5]) end
return 'leased'
"""
)
"""One round trip: skip a job of a complete (compacted) campaign, a cancelled, paused,
finished or running job, else take its lease
(and write that this worker holds its message, when that is still to be written). A job
skipped because its campaign is cancelled or paused leaves the jobs sent (`outstanding`)
in the same step, so `unpause` and `resume` find it to send again. The lease's
expiry in `inflight`, which the reaper on any host compares, is on Redis's clock. Safe to
repeat: a second run with the same token (its first reply lost with the connection) finds
the lease its own.

A lease run out is not free until the reaper takes the job off `inflight`: after a Redis
outage (an append-only file restores a lease's expiry as a time, passed by then) a live
worker renews it (`_RENEW`), and a copy that Celery's transport put back on the queue as
its connection dropped must not run meanwhile. A dead worker's job is sent again by the
reaper, which waits out an outage before it judges (`bridge.delivery.reaper`).

A copy of a job of a compacted campaign (a reaped job whose first copy finished, a stopped
worker's batch resumed) is a late copy: compaction removed the `done` marks, so the
campaign's compacted mark fences it instead, before its target is called."""


#   KEYS[1]  the job's lease (`lease_key`)
#   KEYS[2]  the in-flight sorted set (`inflight_key`)
#   ARGV[1]  this worker's lease token
#   ARGV[2]  the lease's length, ms
#   ARGV[3]  the job id
# Returns 1 if renewed, 0 if the lease is lost.
RENEW_LEASE = (
    NOW_MS_LUA
    + """
local holder = redis.call('GET', KEYS[1])
if holder == ARGV[1] or (not holder and redis.call('ZSCORE', KEYS[2], ARGV[3])) then
  redis.call('SET', KEYS[1], ARGV[1], 'PX', ARGV[2])
  redis.call('ZADD', KEYS[2], now_ms() + tonumber(ARGV[2]), ARGV[3])
  return 1
end
return 0
"""
)
"""Renew the lease if it is ours, or ran out and the reaper has not taken the job (Redis
was away longer than the lease: the worker is alive, and keeps its job). Lost once another
worker holds it or the reaper took the job to send it again."""


#   KEYS[1]  the job's lease (`lease_key`)
#   KEYS[2]  the in-flight sorted set (`inflight_key`)
#   ARGV[1]  this worker's lease token
#   ARGV[2]  the job id
# Returns 1 if this worker's lease was dropped, 0 if it was not its own.
RELEASE_LEASE = """
if redis.call('GET', KEYS[1]) == ARGV[1] then
  redis.call('DEL', KEYS[1])
  redis.call('ZREM', KEYS[2], ARGV[2])
  return 1
end
return 0
"""


# Legend of `PUBLISH` (keys and arguments built by `Publication.of`):
#   KEYS[1]   the hash of the job's done mark (`done_key`), field job id: the attempt that
#             finished it, and its copy
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
#   ARGV[4]   the done marks' (and the paid-again hash's) time to live, seconds
#   ARGV[5]   the worker's lease token, or '' for none to release
#   ARGV[6]   the message id the worker let go of, or '' for none
#   ARGV[7]   the target's name
#   ARGV[8]   the result's status
#   ARGV[9]   the result's cost in USD, or '' when unknown
#   ARGV[10]  '1' when making the result called the target (and it is no regrade), else '0'
#   ARGV[11]  the done mark this publication writes (`bridge.done_marks`)
# Returns 1 (published, now or by an earlier send of this same publication), 0 (already
# published by another) or 2 (late copy): `_OUTCOMES`.
PUBLISH = (
    LET_GO_LUA
    + DONE_ATTEMPT_LUA
    + """
local added, paid_again = 0, 'duplicate'
local mark = redis.call('HGET', KEYS[1], ARGV[2])
if redis.call('EXISTS', KEYS[9]) == 1 then
  added, paid_again = 2, 'late copy'
  redis.call('ZREM', KEYS[5], ARGV[2])
elseif mark == ARGV[11] then
  added, paid_again = 1, nil
elseif done_attempt(mark) < tonumber(ARGV[1]) then
  paid_again = tonumber(ARGV[1]) > 1 and 'retry' or nil
  redis.call('XADD', KEYS[2], '*', 'job_id', ARGV[2], 'result', ARGV[3])
  redis.call('HSET', KEYS[1], ARGV[2], ARGV[11])
  redis.call('EXPIRE', KEYS[1], ARGV[4])
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
no `done` mark behind. A publication sent again after its reply was lost finds its own
done mark and is published, once. A result that called its target (`ARGV[10]`) and is
not its job's first is counted in the campaign's calls paid again
(`bridge.results.paid`), by why."""


#   KEYS[1]  a queue's sent-jobs sorted set (`outstanding_key`): job id scored by send time, ms
#   KEYS[2]  the holders hash (`holders_key`)
#   ARGV[1]  the latest send time looked at, ms
#   ARGV[2]  the lease key prefix (`lease_key("")`); the job id is appended to it
#   ARGV[3]  the most ids to return
# Returns the ids sent by then that no holder record and no lease names.
UNSEEN = """
local found = {}
local ids = redis.call('ZRANGEBYSCORE', KEYS[1], '-inf', ARGV[1])
for _, id in ipairs(ids) do
  if redis.call('HEXISTS', KEYS[2], id) == 0 and redis.call('EXISTS', ARGV[2] .. id) == 0 then
    table.insert(found, id)
    if #found >= tonumber(ARGV[3]) then break end
  end
end
return found
"""
"""The jobs sent before a time that no worker holds and none runs."""


#   KEYS[1..n]  one sent-jobs sorted set per queue (`outstanding_key`)
#   ARGV        for each key in order, a count c, then c job ids
# Returns Redis's time (ms) the ids were scored with.
MARK_SENT = (
    NOW_MS_LUA
    + """
local now, at = now_ms(), 1
for _, key in ipairs(KEYS) do
  local count = tonumber(ARGV[at])
  for i = at + 1, at + count do redis.call('ZADD', key, now, ARGV[i]) end
  at = at + count + 1
end
return now
"""
)
"""Each queue's jobs (a count, then the ids) recorded as sent now, by Redis's clock; returns
that time, for the messages' `SENT_HEADER`."""


# Take the expired leases off the in-flight set, skipping any job whose lease key still
# exists (its lease is alive: a worker renewed it).
#   KEYS[1]  the in-flight sorted set (`inflight_key()`): job id scored by lease expiry, ms
#   ARGV[1]  the most jobs to take in one call
#   ARGV[2]  the lease key prefix (`lease_key("")`); the job id is appended to it
# Returns the ids taken, which the caller sends again.
TAKE_EXPIRED = (
    NOW_MS_LUA
    + """
local ids = redis.call('ZRANGEBYSCORE', KEYS[1], '-inf', now_ms(), 'LIMIT', 0, ARGV[1])
local taken = {}
for _, id in ipairs(ids) do
  if redis.call('EXISTS', ARGV[2] .. id) == 0 then
    redis.call('ZREM', KEYS[1], id)
    table.insert(taken, id)
  end
end
return taken
"""
)
"""The jobs whose lease expired, by Redis's clock (the one the leases were written on)."""


#   KEYS[1]     the campaign's count of listed jobs (`listed_key`)
#   KEYS[2..n]  hashes of the campaign's manifest (`manifest_key`)
#   ARGV[1]     the time to live, seconds
#   ARGV[2..]   for each hash in order, a count c, then c job ids
# Returns how many ids were new.
LIST_JOBS = """
local at, new = 2, 0
for i = 2, #KEYS do
  local count = tonumber(ARGV[at])
  for j = at + 1, at + count do new = new + redis.call('HSETNX', KEYS[i], ARGV[j], '') end
  redis.call('EXPIRE', KEYS[i], ARGV[1])
  at = at + count + 1
end
redis.call('INCRBY', KEYS[1], new)
redis.call('EXPIRE', KEYS[1], ARGV[1])
return new
"""
"""List job ids in a campaign's manifest (`bridge.results.manifest`), each once, and count
the new ones: the count and the ids move together."""


#   KEYS[1..n]  the jobs' stored-value keys (`job_key`)
#   ARGV[1]     the time to live, seconds
#   ARGV[2..]   the stored values, ARGV[i + 1] for KEYS[i]
# Returns nothing.
STORE_JOBS = """
for i, key in ipairs(KEYS) do redis.call('SET', key, ARGV[i + 1], 'EX', ARGV[1]) end
"""
"""Each job's stored value under its key, with the campaign's time to live (ARGV[1]): one
command for a chunk of jobs, not one each: the client's work per command would
otherwise be a large part of a campaign's enqueueing."""


# Admit one call of a job to its target, or say why not; reserve its estimated cost.
#   KEYS[1]  the campaign's cancel mark (`cancel_key`)
#   KEYS[2]  the campaign's pause mark (`paused_key`), set here when the budget is spent
#   KEYS[3]  the budget hash (`budget_key`): limit, spent, reserved, charged, held:<job>
#   KEYS[4]  the campaign's steering audit stream (`audit_key`)
#   KEYS[5]  the campaign's compacted mark (`compacted_key`): set, the job is a late copy
#   ARGV[1]  the job id
#   ARGV[2]  the call's estimated cost, nanodollars, or -1 when not made yet
#   ARGV[3]  the pause's state (JSON), written when the budget pauses the campaign
#   ARGV[4]  now, for the audit line
#   ARGV[5]  who pauses (the audit's `by`)
#   ARGV[6]  the audit line's detail
#   ARGV[7]  the audit stream's length at most
#   ARGV[8]  the pause mark's time to live, seconds
#   ARGV[9]  the reservation's field prefix (`HELD_PREFIX`)
# Returns 'compacted', 'cancelled', 'paused', 'admitted' (no budget), 'estimate' (an
# estimate is needed first), 'wait', 'budget' (spent: the campaign is paused) or 'reserved'.
ADMIT = """
if redis.call('EXISTS', KEYS[5]) == 1 then return 'compacted' end
if redis.call('EXISTS', KEYS[1]) == 1 then return 'cancelled' end
if redis.call('EXISTS', KEYS[2]) == 1 then return 'paused' end
if redis.call('EXISTS', KEYS[3]) == 0 then return 'admitted' end
local b = redis.call('HMGET', KEYS[3], 'limit', 'spent', 'reserved', 'charged')
local limit, spent = tonumber(b[1]), tonumber(b[2] or '0')
local reserved, charged = tonumber(b[3] or '0'), tonumber(b[4] or '0')
local field = ARGV[9] .. ARGV[1]
local own = tonumber(redis.call('HGET', KEYS[3], field) or '0')
reserved = reserved - own
local estimate = tonumber(ARGV[2])
if charged > 0 then
  estimate = math.ceil(spent / charged)
elseif estimate < 0 then
  return 'estimate'
end
if spent < limit and spent + reserved + estimate > limit then
  if reserved > 0 then return 'wait' end
  -- Nothing charged yet to go by: one call alone, holding what is left.
  if charged == 0 then estimate = limit - spent end
end
if spent >= limit or spent + reserved + estimate > limit then
  if redis.call('SET', KEYS[2], ARGV[3], 'NX', 'EX', ARGV[8]) then
    redis.call('XADD', KEYS[4], 'MAXLEN', '~', ARGV[7], '*',
      'action', 'pause', 'at', ARGV[4], 'by', ARGV[5], 'detail', ARGV[6])
  end
  return 'budget'
end
redis.call('HINCRBY', KEYS[3], 'reserved', estimate - own)
redis.call('HSET', KEYS[3], field, estimate)
return 'reserved'
"""
"""A job's earlier reservation (a retried call) is replaced, not added to."""


# Give back a job's reservation on its campaign's budget.
#   KEYS[1]  the budget hash (`budget_key`)
#   ARGV[1]  the job's reservation field (`HELD_PREFIX` + job id)
# Returns 1 if the job held a reservation, 0 if not.
RELEASE_RESERVATION = """
local own = redis.call('HGET', KEYS[1], ARGV[1])
if own then
  redis.call('HDEL', KEYS[1], ARGV[1])
  redis.call('HINCRBY', KEYS[1], 'reserved', -tonumber(own))
end
return own and 1 or 0
"""


# Charge one result to its campaign's budget, settling the reservation its call held.
#   KEYS[1]  the budget hash (`budget_key`): limit, spent, reserved, charged, held:<job>
#   KEYS[2]  the campaign's pause mark (`paused_key`), set when this charge spends the budget
#   KEYS[3]  the campaign's steering audit stream (`audit_key`)
#   ARGV[1]  the result's cost in nanodollars
#   ARGV[2]  the pause mark's JSON (`Paused`), ARGV[3] now (seconds), ARGV[4] who charged,
#   ARGV[5]  the audit entry's detail, ARGV[6] the audit stream's length,
#   ARGV[7]  the pause mark's time to live (seconds)
#   ARGV[8]  the job's reservation field (`held:<job_id>`)
#   ARGV[9]  '1' when the result was priced and published, '0' to only give back the reservation
# Returns 0 when the campaign has no budget, 1 when charged, 2 when this charge paused it.
CHARGE = """
if redis.call('EXISTS', KEYS[1]) == 0 then return 0 end
local own = redis.call('HGET', KEYS[1], ARGV[8])
if own then
  redis.call('HDEL', KEYS[1], ARGV[8])
  redis.call('HINCRBY', KEYS[1], 'reserved', -tonumber(own))
end
if ARGV[9] == '0' then return 1 end
redis.call('HINCRBY', KEYS[1], 'charged', 1)
local spent = redis.call('HINCRBY', KEYS[1], 'spent', ARGV[1])
local limit = tonumber(redis.call('HGET', KEYS[1], 'limit'))
if spent >= limit and redis.call('SET', KEYS[2], ARGV[2], 'NX', 'EX', ARGV[7]) then
  redis.call('XADD', KEYS[3], 'MAXLEN', '~', ARGV[6], '*',
    'action', 'pause', 'at', ARGV[3], 'by', ARGV[4], 'detail', ARGV[5])
  return 2
end
return 1
"""
"""Settle the job's reservation (ARGV[8], its field) and charge (unless ARGV[9] is 0: a
result with no price only gives its reservation back); 2 when this charge reached the
limit and paused the campaign, 1 when charged, 0 when the campaign has no budget."""


#   KEYS[1]  the target's bucket hash (`_bucket_key(target, 'rpm' | 'tpm')`): `tokens`, `at` (ms)
#   ARGV[1]  the refill rate, tokens per second
#   ARGV[2]  the bucket's size (its burst)
#   ARGV[3]  the tokens this call costs
# Returns 0 when the tokens were taken, else the ms until there will be enough.
TAKE_TOKENS = (
    NOW_MS_LUA
    + """
local rate, burst = tonumber(ARGV[1]), tonumber(ARGV[2])
local now, cost = now_ms(), tonumber(ARGV[3])
local state = redis.call('HMGET', KEYS[1], 'tokens', 'at')
local tokens = tonumber(state[1]) or burst
local at = tonumber(state[2]) or now
tokens = math.min(burst, tokens + (now - at) * rate / 1000)
local wait = 0
if tokens >= cost then
  tokens = tokens - cost
else
  wait = math.ceil((cost - tokens) * 1000 / rate)
end
redis.call('HSET', KEYS[1], 'tokens', tokens, 'at', now)
redis.call('PEXPIRE', KEYS[1], 120000)
return wait
"""
)
"""Take `cost` tokens now (returns 0), or say how many ms until there will be enough. Every
worker's refills are timed on one clock, Redis's."""


#   KEYS[1]  the target's slots sorted set (`_bucket_key(target, 'slots')`): slot id scored
#            by its lease's end, ms on Redis's clock
#   ARGV[1]  the concurrency cap
#   ARGV[2]  the slot's lease, ms
#   ARGV[3]  the slot id
# Returns 1 if the slot was taken, 0 when the cap is reached.
TAKE_SLOT = (
    NOW_MS_LUA
    + """
local now = now_ms()
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', now)
if redis.call('ZCARD', KEYS[1]) < tonumber(ARGV[1]) then
  redis.call('ZADD', KEYS[1], now + tonumber(ARGV[2]), ARGV[3])
  return 1
end
return 0
"""
)
"""Take a slot, leased until a time on Redis's clock (ms), if fewer than the cap are held."""


# Take or keep a campaign's collector lease.
#   KEYS[1]  the campaign's collector lease (`collector_lease_key`)
#   ARGV[1]  this collector's name
#   ARGV[2]  the lease's length, ms
# Returns 1 if this collector holds the campaign now, 0 if another one does.
HOLD_COLLECTOR = """
local holder = redis.call('GET', KEYS[1])
if holder == false or holder == ARGV[1] then
  redis.call('SET', KEYS[1], ARGV[1], 'PX', ARGV[2])
  return 1
end
return 0
"""


#   KEYS[1]  the campaign's retry request (`retry_request_key`): a `RetryRequest`, JSON
#   ARGV[1]  the request id to withdraw
# Returns 1 if that request was still waiting and is deleted, 0 if a collector took it.
WITHDRAW_RETRY = """
local raw = redis.call('GET', KEYS[1])
if raw and cjson.decode(raw)['request_id'] == ARGV[1] then return redis.call('DEL', KEYS[1]) end
return 0
"""


# Renew a drop's lock, only if this watcher holds it.
#   KEYS[1]  the drop's lock (`intake_lock_key`)
#   ARGV[1]  this watcher's name
#   ARGV[2]  the lock's length, seconds
# Returns OK if renewed, nil (false) if another watcher holds it or none does.
RENEW_INTAKE_LOCK = """
if redis.call('GET', KEYS[1]) == ARGV[1] then
  return redis.call('SET', KEYS[1], ARGV[1], 'EX', ARGV[2])
end
return false
"""


# Release a lock taken with a token (`SET key token NX`), only if the token is still its.
#   KEYS[1]  the lock: a campaign's rebuild lock (`rebuild_lock_key`), its collector lease
#            (`collector_lease_key`) or a drop's intake lock (`intake_lock_key`)
#   ARGV[1]  the token written when the lock was taken (a process's token, a collector's
#            or a watcher's name)
# Returns 1 if the lock was deleted, 0 if another holder has it (or nobody does).
RELEASE_LOCK = """
if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('DEL', KEYS[1]) end
return 0
"""


def release_lock(client: redis.Redis | Pipeline, lock: str, token: str) -> Any:
    """`RELEASE_LOCK`: delete `lock` if it still holds `token`. Returns 1 or 0 (on a
    pipeline, the pipeline: the reply comes with its others)."""
    return client.eval(RELEASE_LOCK, 1, lock, token)

-- Functions every script shares, spliced in by the loader (fairway/queue/protocol/scripts.py). In the sources,
-- QK.<part> names a queue's key part and GK.<part> a tenant group's; the loader writes the literal.

-- The Redis server's clock in ms: every deadline and due time is on this one clock.
local function now_ms()
  local t = redis.call('TIME')
  return tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
end

-- A queue's key, derived from the prefix (standalone only: the cluster path passes KEYS).
local function queue_key(prefix, queue, part)
  return prefix .. ':{' .. queue .. '}:' .. part
end

-- A job's counters are one field of its family's attempts hash, sha1(member) (its digest) -> attempts started
-- + LOST x times it was running when its worker vanished (its reservation expired): one HINCRBY
-- counts an attempt and reads both.
local LOST = 1048576  -- 2^20: attempts never reach it (max_tries is at most 1,000)

-- Forget a job's counters (it is done, or failed for good).
local function forget_counts(attempts, digest)
  redis.call('HDEL', attempts, digest)
end

-- Count one more attempt of a job being reserved; {attempts started, times lost}.
local function count_attempt(attempts, digest)
  local both = redis.call('HINCRBY', attempts, digest, 1)
  return {both % LOST, math.floor(both / LOST)}
end

-- A reservation expired: its worker vanished mid-job. The attempt is given back (losing a worker
-- is not the job's failure) and counted as lost instead, so a job that kills every worker that
-- runs it can still be stopped (the worker fails it past its lost limit).
local function count_lost(attempts, digest)
  redis.call('HINCRBY', attempts, digest, LOST - 1)
end

-- A reservation is a lease: the member in `reserved` with its deadline, and in `leased` under the same
-- digest as its counters, so the worker holding it renews it by digest (renew.lua) while it lives,
-- without sending documents. A worker that dies stops renewing, and its jobs come back when the
-- lease runs out (seconds), not after the job's whole timeout.
-- False when a copy with the same bytes is leased already (a producer sent one document twice): the
-- caller drops this copy, which is the same job, instead of letting two copies share one lease.
-- Returns the member's digest (sha1, computed once per job), or false for such a copy.
local function lease(reserved, leased, member, deadline)
  if redis.call('ZADD', reserved, 'NX', deadline, member) == 0 then return false end
  local digest = redis.sha1hex(member)
  redis.call('HSET', leased, digest, member)
  return digest
end

-- End a lease; its digest, or false when it had already run out (the job may be running elsewhere).
local function unlease(reserved, leased, member)
  if redis.call('ZREM', reserved, member) == 0 then return false end
  local digest = redis.sha1hex(member)
  redis.call('HDEL', leased, digest)
  return digest
end

-- Acknowledge a plain job: end its lease and drop its counters. 1, or 0 when the lease had already
-- run out (the job may be running again elsewhere).
local function ack_job(reserved, leased, attempts, doc)
  local digest = unlease(reserved, leased, doc)
  if not digest then return 0 end
  forget_counts(attempts, digest)
  return 1
end

-- Keep a failure record under the job's id and trim the store to its newest `kept` records.
local function store_failure(failed, index, id, record, now, kept)
  redis.call('HSET', failed, id, record)
  redis.call('ZADD', index, now, id)
  local excess = redis.call('ZCARD', index) - kept
  if excess > 0 then
    local oldest = redis.call('ZRANGE', index, 0, excess - 1)
    redis.call('ZREMRANGEBYRANK', index, 0, excess - 1)
    redis.call('HDEL', failed, unpack(oldest))
  end
end

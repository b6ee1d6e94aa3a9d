-- Functions every script shares, spliced in by the loader (fairway/queue/scripts.py) after the
-- generated key table (QK: a queue's key parts, GK: a tenant group's).

-- The Redis server's clock in ms: every deadline and due time is on this one clock.
local function now_ms()
  local t = redis.call('TIME')
  return tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
end

-- A queue's key, derived from the prefix (standalone only: the cluster path passes KEYS).
local function queue_key(prefix, queue, part)
  return prefix .. ':{' .. queue .. '}:' .. part
end

-- A job's counters live in its family's attempts hash: sha1(member) -> attempts started, and
-- sha1(member) .. ':lost' -> times it was running when its worker vanished (reservation expired).
local function lost_field(sha) return sha .. ':lost' end

-- Forget a job's counters (it is done, or failed for good).
local function forget_counts(attempts, member)
  local sha = redis.sha1hex(member)
  redis.call('HDEL', attempts, sha, lost_field(sha))
end

-- Count one more attempt of a job being reserved; {attempts started, times lost}.
local function count_attempt(attempts, member)
  local sha = redis.sha1hex(member)
  local started = redis.call('HINCRBY', attempts, sha, 1)
  return {started, tonumber(redis.call('HGET', attempts, lost_field(sha)) or 0)}
end

-- A reservation expired: its worker vanished mid-job. The attempt is given back (losing a worker
-- is not the job's failure) and counted as lost instead, so a job that kills every worker that
-- runs it can still be stopped (the worker fails it past its lost limit).
local function count_lost(attempts, member)
  local sha = redis.sha1hex(member)
  if redis.call('HINCRBY', attempts, sha, -1) <= 0 then redis.call('HDEL', attempts, sha) end
  redis.call('HINCRBY', attempts, lost_field(sha), 1)
end

-- Acknowledge a plain job: drop its reservation and its counters. 1, or 0 when the reservation had
-- already expired (the job may be running again elsewhere).
local function ack_job(reserved, attempts, doc)
  if redis.call('ZREM', reserved, doc) == 0 then return 0 end
  forget_counts(attempts, doc)
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

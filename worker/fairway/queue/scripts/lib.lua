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

-- Acknowledge a plain job: drop its reservation and its attempt counter. 1, or 0 when the
-- reservation had already expired (the job may be running again elsewhere).
local function ack_job(reserved, attempts, doc)
  if redis.call('ZREM', reserved, doc) == 0 then return 0 end
  redis.call('HDEL', attempts, redis.sha1hex(doc))
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

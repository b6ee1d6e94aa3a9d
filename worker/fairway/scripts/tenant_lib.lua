-- Tenant-group functions, spliced into the scripts that include them (see fairway/store.py).
-- Every key below starts with G = '<prefix>:{tenants:<queuePrefix>}:', one hash tag, so one slot:
--   ring, qring       lists of active tenant ids: healthy, and quarantined (the slow lane)
--   quarantined       set of quarantined tenant ids
--   state             hash: cur/n (ring head and jobs served in a row), qcur/qn (same for qring)
--   t:<id>            list: the tenant's ready job documents
--   reserved          zset: '<id>\t<document>' -> reservation deadline (ms)
--   delayed           zset: '<id>\t<document>' -> due time (ms)
--   attempts          hash: sha1(member) -> attempts started
--   notify            list: one token per ready job (idle workers block on it)
--   inflight          hash: id -> jobs reserved now
--   fails:<id>        hash: failure bucket -> failed attempts (bucket = window / 10)
--   stats:<id>:<min>  hash: c (completed), f (failed attempts), w<k> (wait histogram) per minute
--   seen              zset: id -> last activity (ms), for listing tenants
-- Tenant ids never contain a tab, so '<id>\t<document>' splits unambiguously.

local function now_ms()
  local t = redis.call('TIME')
  return tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
end

local function split_member(member)
  local tab = string.find(member, '\t', 1, true)
  return string.sub(member, 1, tab - 1), string.sub(member, tab + 1)
end

-- Make a tenant's document ready; a tenant whose list was empty joins the ring it belongs in.
local function push_tenant(G, id, doc, now)
  local length = redis.call('RPUSH', G .. 't:' .. id, doc)
  redis.call('RPUSH', G .. 'notify', '1')
  if length == 1 then
    if redis.call('SISMEMBER', G .. 'quarantined', id) == 1 then
      redis.call('RPUSH', G .. 'qring', id)
    else
      redis.call('RPUSH', G .. 'ring', id)
    end
  end
  redis.call('ZADD', G .. 'seen', now, id)
end

-- Failed attempts of a tenant within the window; drops buckets that have aged out.
local function failures(G, id, now, window_ms)
  local width = math.max(1, math.floor(window_ms / 10))
  local current = math.floor(now / width)
  local key = G .. 'fails:' .. id
  local raw = redis.call('HGETALL', key)
  local total = 0
  for i = 1, #raw, 2 do
    if tonumber(raw[i]) > current - 10 then
      total = total + tonumber(raw[i + 1])
    else
      redis.call('HDEL', key, raw[i])
    end
  end
  return total
end

local function record_failure(G, id, now, window_ms, threshold)
  local width = math.max(1, math.floor(window_ms / 10))
  local key = G .. 'fails:' .. id
  redis.call('HINCRBY', key, math.floor(now / width), 1)
  redis.call('PEXPIRE', key, window_ms + width)
  if failures(G, id, now, window_ms) > threshold then
    redis.call('SADD', G .. 'quarantined', id)
  end
end

-- Per-tenant, per-minute figures: completed or failed, and the wait-time bucket (-1 = unknown).
local function record_figures(G, id, now, outcome, wait_bucket)
  local key = G .. 'stats:' .. id .. ':' .. math.floor(now / 60000)
  redis.call('HINCRBY', key, outcome, 1)
  if wait_bucket >= 0 then redis.call('HINCRBY', key, 'w' .. wait_bucket, 1) end
  redis.call('EXPIRE', key, 3900)
  redis.call('ZADD', G .. 'seen', now, id)
end

local function leave_flight(G, id)
  if redis.call('HINCRBY', G .. 'inflight', id, -1) <= 0 then redis.call('HDEL', G .. 'inflight', id) end
end

-- Acknowledge a finished tenant job; figures ride in the same call.
local function ack_tenant(G, member, wait_bucket)
  if redis.call('ZREM', G .. 'reserved', member) == 0 then return 0 end
  redis.call('HDEL', G .. 'attempts', redis.sha1hex(member))
  local id = split_member(member)
  leave_flight(G, id)
  record_figures(G, id, now_ms(), 'c', wait_bucket)
  return 1
end

-- Serve the next tenant: round-robin over the ring with at most k jobs in a row per tenant; the
-- slow lane is drawn with weight sample_rate * (its length) against the ring's length, so each
-- quarantined tenant gets sample_rate times a healthy tenant's turns. O(1) in the number of tenants.
-- Returns {id, document, attempts} or false.
local function pop_tenant(G, k, threshold, window_ms, sample_rate, u, deadline)
  local ring, qring, state = G .. 'ring', G .. 'qring', G .. 'state'
  for _ = 1, 16 do
    local nh, nq = redis.call('LLEN', ring), redis.call('LLEN', qring)
    if nh + nq == 0 then return false end
    local slow = false
    if nq > 0 then
      if nh == 0 then
        slow = true
      else
        local p = sample_rate * nq / (nh + sample_rate * nq)
        slow = u < p
        if slow then u = u / p else u = (u - p) / (1 - p) end
      end
    end
    local r, curf, nf = ring, 'cur', 'n'
    if slow then r, curf, nf = qring, 'qcur', 'qn' end
    local id = redis.call('LINDEX', r, 0)
    if (not slow) and redis.call('SISMEMBER', G .. 'quarantined', id) == 1 then
      redis.call('LPOP', ring)  -- quarantined since it joined the ring: to the slow lane, then draw again
      redis.call('RPUSH', qring, id)
    else
      local list = G .. 't:' .. id
      local doc = redis.call('LPOP', list)
      if not doc then
        redis.call('LPOP', r)  -- an emptied list still in the ring: heal and draw again
      else
        local st = redis.call('HMGET', state, curf, nf)
        local n = 1
        if st[1] == id then n = (tonumber(st[2]) or 0) + 1 end
        if redis.call('LLEN', list) == 0 then
          redis.call('LPOP', r)
          redis.call('HSET', state, curf, '', nf, 0)
        elseif slow and failures(G, id, now_ms(), window_ms) <= threshold then
          redis.call('LPOP', qring)  -- its failures aged out: back to the healthy ring
          redis.call('SREM', G .. 'quarantined', id)
          redis.call('RPUSH', ring, id)
          redis.call('HSET', state, curf, '', nf, 0)
        elseif n >= k then
          redis.call('LMOVE', r, r, 'LEFT', 'RIGHT')
          redis.call('HSET', state, curf, '', nf, 0)
        else
          redis.call('HSET', state, curf, id, nf, n)
        end
        local member = id .. '\t' .. doc
        local attempts = redis.call('HINCRBY', G .. 'attempts', redis.sha1hex(member), 1)
        redis.call('ZADD', G .. 'reserved', deadline, member)
        redis.call('HINCRBY', G .. 'inflight', id, 1)
        redis.call('LPOP', G .. 'notify')
        return {id, doc, attempts}
      end
    end
  end
  return false
end

-- Tenant-group functions, spliced into the scripts that include them (see fairway/queue/protocol/scripts.py).
-- Every key starts with G = '<prefix>:{tenants:<queuePrefix>}:', one hash tag, so one slot; the key
-- parts (GK) are listed in fairway/queue/protocol/keys.py. Tenant ids never contain a tab, so a delayed
-- member '<id>\t<document>' splits unambiguously, and so does a reservation member
-- '<id>\t<job key>\t<tag>' (the job key of a tenant's job is '<tenant id>\t<job id>', see lib.lua).

-- The tenant group's settings, passed by every script that needs them as five ARGV entries in this
-- order (fairway/queue/protocol/scripts.py builds them): G, max_consecutive_jobs, quarantine_failures,
-- quarantine_window_ms, quarantine_sample_rate.
local function read_group(argv, first)
  return {
    G = argv[first],
    max_consecutive_jobs = tonumber(argv[first + 1]),
    quarantine_failures = tonumber(argv[first + 2]),
    quarantine_window_ms = tonumber(argv[first + 3]),
    quarantine_sample_rate = tonumber(argv[first + 4]),
  }
end

local function split_member(member)
  local tab = string.find(member, '\t', 1, true)
  return string.sub(member, 1, tab - 1), string.sub(member, tab + 1)
end

-- A tenant with ready jobs joins the ring it belongs in (the slow lane when quarantined).
local function join_ring(G, id)
  if redis.call('SISMEMBER', G .. GK.quarantined, id) == 1 then
    redis.call('RPUSH', G .. GK.qring, id)
  else
    redis.call('RPUSH', G .. GK.ring, id)
  end
end

-- Make a tenant's document ready; a tenant whose list was empty joins its ring, unless it is paused
-- (it joins when it is continued).
local function push_tenant(G, id, doc, now)
  local length = redis.call('RPUSH', G .. GK.t .. id, doc)
  redis.call('RPUSH', G .. GK.notify, '1')
  if length == 1 and redis.call('SISMEMBER', G .. GK.paused_tenants, id) == 0 then join_ring(G, id) end
  redis.call('ZADD', G .. GK.seen, now, id)
end

-- Failed attempts of a tenant within the quarantine window; drops buckets that have aged out.
local function failures(group, id, now)
  local width = math.max(1, math.floor(group.quarantine_window_ms / 10))
  local current = math.floor(now / width)
  local key = group.G .. GK.fails .. id
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

local function record_failure(group, id, now)
  local window_ms = group.quarantine_window_ms
  local width = math.max(1, math.floor(window_ms / 10))
  local key = group.G .. GK.fails .. id
  redis.call('HINCRBY', key, math.floor(now / width), 1)
  redis.call('PEXPIRE', key, window_ms + width)
  if failures(group, id, now) > group.quarantine_failures then
    redis.call('SADD', group.G .. GK.quarantined, id)
  end
end

-- Per-tenant, per-minute figures: completed or failed, and the wait-time bucket (-1 = unknown).
local function record_figures(G, id, now, outcome, wait_bucket)
  local key = G .. GK.stats .. id .. ':' .. math.floor(now / 60000)
  redis.call('HINCRBY', key, outcome, 1)
  if wait_bucket >= 0 then redis.call('HINCRBY', key, 'w' .. wait_bucket, 1) end
  redis.call('EXPIRE', key, 3900)
  redis.call('ZADD', G .. GK.seen, now, id)
end

local function leave_flight(G, id)
  if redis.call('HINCRBY', G .. GK.inflight, id, -1) <= 0 then redis.call('HDEL', G .. GK.inflight, id) end
end

-- Acknowledge a finished tenant job; figures ride in the same call.
local function ack_tenant(G, member, wait_bucket)
  local jk = unlease(G .. GK.reserved, G .. GK.leased, member)
  if not jk then return 0 end
  forget_counts(G .. GK.attempts, jk)
  local id = split_member(member)
  leave_flight(G, id)
  record_figures(G, id, now_ms(), 'c', wait_bucket)
  return 1
end

-- Serve the next tenant: round-robin over the ring with at most max_consecutive_jobs in a row per
-- tenant; the slow lane is drawn with weight sample_rate * (its length) against the ring's length,
-- so each quarantined tenant gets sample_rate times a healthy tenant's turns. O(1) in the number
-- of tenants. `tag` names the reserving worker call (lib.lua's lease).
-- Returns {id, document, attempts, lost, reservation member} or false.
local function pop_tenant(group, u, deadline, tag)
  local G = group.G
  local ring, qring, state = G .. GK.ring, G .. GK.qring, G .. GK.state
  for _ = 1, 16 do
    local nh, nq = redis.call('LLEN', ring), redis.call('LLEN', qring)
    if nh + nq == 0 then return false end
    local slow = false
    if nq > 0 then
      if nh == 0 then
        slow = true
      else
        local rate = group.quarantine_sample_rate
        local p = rate * nq / (nh + rate * nq)
        slow = u < p
        if slow then u = u / p else u = (u - p) / (1 - p) end
      end
    end
    local r, curf, nf = ring, 'cur', 'n'
    if slow then r, curf, nf = qring, 'qcur', 'qn' end
    local id = redis.call('LINDEX', r, 0)
    if redis.call('SISMEMBER', G .. GK.paused_tenants, id) == 1 then
      redis.call('LPOP', r)  -- paused: out of the ring, its jobs kept, until `fairway continue --tenant`
      redis.call('HSET', state, curf, '', nf, 0)
    elseif (not slow) and redis.call('SISMEMBER', G .. GK.quarantined, id) == 1 then
      redis.call('LPOP', ring)  -- quarantined since it joined the ring: to the slow lane, then draw again
      redis.call('RPUSH', qring, id)
    else
      local list = G .. GK.t .. id
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
        elseif slow and failures(group, id, now_ms()) <= group.quarantine_failures then
          redis.call('LPOP', qring)  -- its failures aged out: back to the healthy ring
          redis.call('SREM', G .. GK.quarantined, id)
          redis.call('RPUSH', ring, id)
          redis.call('HSET', state, curf, '', nf, 0)
        elseif n >= group.max_consecutive_jobs then
          redis.call('LMOVE', r, r, 'LEFT', 'RIGHT')
          redis.call('HSET', state, curf, '', nf, 0)
        else
          redis.call('HSET', state, curf, id, nf, n)
        end
        local jk = id .. '\t' .. job_key(doc)
        redis.call('LPOP', G .. GK.notify)
        local member = lease(G .. GK.reserved, G .. GK.leased, jk, tag, doc, deadline)
        if member then
          local counts = count_attempt(G .. GK.attempts, jk)
          redis.call('HINCRBY', G .. GK.inflight, id, 1)
          return {id, doc, counts[1], counts[2], member}
        end
        -- a copy of a job held now (see lib.lua's lease): dropped; draw again
      end
    end
  end
  return false
end

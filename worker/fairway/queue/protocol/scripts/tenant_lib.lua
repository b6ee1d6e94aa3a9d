-- Tenant-group functions of the worker's side, spliced in after tenant_ring.lua (see
-- fairway/queue/protocol/scripts.py).

-- The tenant group's settings, passed by every script that needs them as six ARGV entries in this
-- order (fairway/queue/protocol/calls.py's TenantGroup.argv builds them): G, max_consecutive_jobs,
-- quarantine_failures, quarantine_window_ms, quarantine_sample_rate, quarantine_run_time_share.
local function read_group(argv, first)
  return {
    G = argv[first],
    max_consecutive_jobs = tonumber(argv[first + 1]),
    quarantine_failures = tonumber(argv[first + 2]),
    quarantine_window_ms = tonumber(argv[first + 3]),
    quarantine_sample_rate = tonumber(argv[first + 4]),
    quarantine_run_time_share = tonumber(argv[first + 5]),
  }
end

-- Per-tenant settings: `<weight>,<maxInFlight>,<rate>,<burst>`, an empty field unset. A field comes
-- from the run-time settings (tset), else the resource's override for the tenant (tconf[id]), else
-- the resource's defaults (tconf['*']); weight defaults to 1, burst to one second's worth of rate.
local function decode_settings(raw)
  if not raw then return {} end
  local w, c, r, b = string.match(raw, '^([^,]*),([^,]*),([^,]*),([^,]*)$')
  return {weight = tonumber(w), max_in_flight = tonumber(c), rate = tonumber(r), burst = tonumber(b)}
end

local SETTING_FIELDS = {'weight', 'max_in_flight', 'rate', 'burst'}

local function merge_settings(...)
  local out = {}
  for _, layer in ipairs({...}) do
    for _, f in ipairs(SETTING_FIELDS) do
      if out[f] == nil then out[f] = layer[f] end
    end
  end
  return out
end

-- What the whole group has set, read once per script call: whether any tenant has settings (when
-- none has, a pop reads nothing more) and the highest weight in effect (each turn's share of K).
local function group_meta(group)
  if group.meta == nil then
    local m = redis.call('HMGET', group.G .. GK.tmeta, 'any', 'wmax')
    group.meta = {any = m[1] == '1', wmax = tonumber(m[2]) or 1}
    if group.meta.any then
      group.meta.defaults = decode_settings(redis.call('HGET', group.G .. GK.tconf, '*'))
    end
  end
  return group.meta
end

local NO_SETTINGS = {weight = 1}

local function settings_of(group, id)
  local meta = group_meta(group)
  if not meta.any then return NO_SETTINGS end
  local G = group.G
  local s = merge_settings(decode_settings(redis.call('HGET', G .. GK.tset, id)),
    decode_settings(redis.call('HGET', G .. GK.tconf, id)), meta.defaults)
  s.weight = s.weight or 1
  if s.rate and not s.burst then s.burst = math.max(1, s.rate) end
  return s
end

-- A parked tenant (at its cap, or out of tokens) goes back into its ring, with a wake-up token for
-- its ready jobs, unless it has none or is paused.
local function unpark(G, id)
  if redis.call('ZREM', G .. GK.parked, id) == 0 then return end
  if redis.call('LLEN', G .. GK.t .. id) > 0 and redis.call('SISMEMBER', G .. GK.paused_tenants, id) == 0 then
    join_ring(G, id)
    redis.call('RPUSH', G .. GK.notify, '1')
  end
end

-- Tenants whose next token is due come back (once per script call, at most 100 at a time).
local function unpark_due(group, now)
  if group.unparked or not group_meta(group).any then return end
  group.unparked = true
  local due = redis.call('ZRANGEBYSCORE', group.G .. GK.parked, '-inf', now, 'LIMIT', 0, 100)
  for i = 1, #due do unpark(group.G, due[i]) end
end

-- Take one token from the tenant's bucket; or, when it has none, the time (ms) the next one is due.
local function take_token(G, id, rate, burst, now)
  local tokens = burst
  local raw = redis.call('HGET', G .. GK.bucket, id)
  if raw then
    local t, at = string.match(raw, '^(%S+) (%S+)$')
    tokens = math.min(burst, tonumber(t) + math.max(0, now - tonumber(at)) * rate / 1000)
  end
  if tokens < 1 then return now + math.ceil((1 - tokens) * 1000 / rate) end
  redis.call('HSET', G .. GK.bucket, id, string.format('%.6f %d', tokens - 1, now))
  return nil
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
    redis.call('HSET', group.G .. GK.qreason, id, 'failures')
  end
end

-- Run time: each tenant's in-flight jobs integrated over time (slot-ms) into 10 s buckets, at every
-- housekeeping call of any worker (tmeta's `acct`: when the last one counted), so a job still
-- running counts as it runs, not when it ends. The share of the last minute's buckets is what
-- quarantines a slow tenant.
local BUSY_BUCKET_MS = 10000
local BUSY_BUCKETS = 6
local BUSY_EVIDENCE_MS = 10000  -- judge a share only once the window holds this much busy time

-- Each tenant's slot-ms over the last minute, the group's, and the wall-clock ms counted while any
-- job ran (`@`: how much evidence the shares rest on).
local function busy_shares(G, now)
  local last = math.floor(now / BUSY_BUCKET_MS)
  local mine, total, wall = {}, 0, 0
  for b = last - BUSY_BUCKETS + 1, last do
    local raw = redis.call('HGETALL', G .. GK.busy .. b)
    for i = 1, #raw, 2 do
      local v = tonumber(raw[i + 1])
      if raw[i] == '*' then
        total = total + v
      elseif raw[i] == '@' then
        wall = wall + v
      else
        mine[raw[i]] = (mine[raw[i]] or 0) + v
      end
    end
  end
  return mine, total, wall
end

-- Whether a tenant other than `id` has jobs waiting for a turn.
local function others_wait(G, id)
  local waiting = redis.call('LLEN', G .. GK.ring) + redis.call('LLEN', G .. GK.qring)
  if redis.call('LLEN', G .. GK.t .. id) > 0 and redis.call('ZSCORE', G .. GK.parked, id) == false then
    waiting = waiting - 1
  end
  return waiting > 0
end

local function account_run_time(group, now)
  local G = group.G
  local since = tonumber(redis.call('HGET', G .. GK.tmeta, 'acct'))
  redis.call('HSET', G .. GK.tmeta, 'acct', now)
  if not since or now <= since then return end
  local elapsed = math.min(now - since, BUSY_BUCKET_MS * BUSY_BUCKETS)
  local flight = redis.call('HGETALL', G .. GK.inflight)
  if #flight == 0 then return end
  local key = G .. GK.busy .. math.floor(now / BUSY_BUCKET_MS)
  redis.call('HINCRBY', key, '@', elapsed)
  for i = 1, #flight, 2 do
    local n = tonumber(flight[i + 1])
    if n > 0 then
      redis.call('HINCRBY', key, flight[i], n * elapsed)
      redis.call('HINCRBY', key, '*', n * elapsed)
    end
  end
  redis.call('PEXPIRE', key, BUSY_BUCKET_MS * (BUSY_BUCKETS + 1))
  if group.quarantine_run_time_share >= 1 then return end
  local mine, total, wall = busy_shares(G, now)
  if wall < BUSY_EVIDENCE_MS then return end  -- a second of bursty samples is no evidence of slowness
  for i = 1, #flight, 2 do
    local id = flight[i]
    if total > 0 and (mine[id] or 0) / total > group.quarantine_run_time_share and others_wait(G, id)
        and redis.call('SADD', G .. GK.quarantined, id) == 1 then
      redis.call('HSET', G .. GK.qreason, id, 'slow')
    end
  end
end

-- A tenant quarantined for its run time share is served from the slow lane only while its jobs hold
-- less than that share of the group's in-flight jobs, while other tenants have jobs running or
-- waiting. A running job cannot be taken back, and other tenants' jobs often arrive one at a time
-- (nobody is waiting at the moment a slot frees): without this, each freed slot would go to the slow
-- tenant, and the next quick job would wait minutes. So a slot stays free for them instead.
local function over_slot_share(group, id)
  local G = group.G
  if group.quarantine_run_time_share >= 1 or redis.call('HGET', G .. GK.qreason, id) ~= 'slow' then
    return false
  end
  local flight = redis.call('HVALS', G .. GK.inflight)
  local total = 0
  for i = 1, #flight do total = total + tonumber(flight[i]) end
  local mine = tonumber(redis.call('HGET', G .. GK.inflight, id)) or 0
  if (mine + 1) / (total + 1) <= group.quarantine_run_time_share then return false end
  return total > mine or others_wait(G, id)  -- others run or wait now; alone, it may take any slot
end

-- Whether a quarantined tenant may return to the healthy ring: its failures in the window are back
-- under the limit, and, when it is there for its run time, its share over the last minute has fallen to half of runTimeShare
-- (hysteresis: held at its share of the slots, a tenant of long jobs sits near runTimeShare, and
-- back in the ring it would take a free slot at every turn again), or it is alone: no other tenant
-- ran in the last minute and none waits now (one it starved has not run, but waits).
local function healthy_again(group, id, now)
  if failures(group, id, now) > group.quarantine_failures then return false end
  if group.quarantine_run_time_share >= 1 or redis.call('HGET', group.G .. GK.qreason, id) ~= 'slow' then
    return true  -- quarantined for its failures: back as soon as they aged out
  end
  local mine, total = busy_shares(group.G, now)
  local own = mine[id] or 0
  if total > own then return own / total <= group.quarantine_run_time_share / 2 end
  return not others_wait(group.G, id)
end

-- Per-tenant, per-minute figures: completed or failed, and the wait-time bucket (-1 = unknown).
local function record_figures(G, id, now, outcome, wait_bucket)
  local key = G .. GK.stats .. id .. ':' .. math.floor(now / 60000)
  redis.call('HINCRBY', key, outcome, 1)
  if wait_bucket >= 0 then redis.call('HINCRBY', key, 'w' .. wait_bucket, 1) end
  redis.call('EXPIRE', key, 3900)
  redis.call('ZADD', G .. GK.seen, now, id)
end

-- One of the tenant's jobs settled (or its reservation came back): a slot of its cap is free, so a
-- tenant parked at its cap returns to its ring (its cap is checked again at its turn).
-- `limits`: false when the caller knows no tenant has a setting (nothing can be parked), to spare a call.
local function leave_flight(G, id, limits)
  if redis.call('HINCRBY', G .. GK.inflight, id, -1) <= 0 then redis.call('HDEL', G .. GK.inflight, id) end
  if limits ~= false then unpark(G, id) end
end

-- Acknowledge a finished tenant job; figures ride in the same call.
local function ack_tenant(G, member, wait_bucket, limits, outcome)
  local jk = end_lease(G .. GK.reserved, G .. GK.leased, member)
  if not jk then return 0 end
  forget_counts(G .. GK.attempts, jk, outcome or 'succeeded')
  local id = split_member(member)
  leave_flight(G, id, limits)
  record_figures(G, id, now_ms(), 'c', wait_bucket)
  return 1
end

-- Serve the next tenant: round-robin over the ring, each tenant's turns weighted (deficit round-robin:
-- a turn earns K x weight / the highest weight in effect, so equal weights give every tenant K in a
-- row, as without weights) and never more than max_consecutive_jobs (K) in a row; the slow lane is
-- drawn with weight sample_rate * (its length) against the ring's length, so each quarantined tenant
-- gets sample_rate times a healthy tenant's turns. A tenant at its in-flight cap, or out of rate
-- tokens, is parked (out of the ring, its jobs kept) until a job of its settles or its next token is
-- due; the turn goes to the next tenant. O(1) in the number of tenants. `tag` names the reserving
-- worker call (lib.lua's lease).
-- Returns {id, document, attempts, lost, reservation member} or false.
local function pop_tenant(group, u, deadline, tag)
  local G = group.G
  local ring, qring, state = G .. GK.ring, G .. GK.qring, G .. GK.state
  local now = nil  -- the Redis clock, read only when a setting or the slow lane needs it
  if group_meta(group).any then
    now = now_ms()
    unpark_due(group, now)
  end
  local K = group.max_consecutive_jobs
  for _ = 1, 32 do
    local nh, nq = redis.call('LLEN', ring), redis.call('LLEN', qring)
    if nh + nq == 0 then
      -- Nothing can be served now: drop the wake-up tokens of jobs that wait (paused or parked
      -- tenants), so idle workers block instead of spinning; whatever makes a job servable again
      -- (an enqueue, a release, a continue, an unpark) pushes a token.
      redis.call('DEL', G .. GK.notify)
      return false
    end
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
    local list = G .. GK.t .. id
    if redis.call('SISMEMBER', G .. GK.paused_tenants, id) == 1 then
      redis.call('LPOP', r)  -- paused: out of the ring, its jobs kept, until `fairway continue --tenant`
      redis.call('HSET', state, curf, '', nf, 0)
    elseif (not slow) and redis.call('SISMEMBER', G .. GK.quarantined, id) == 1 then
      redis.call('LPOP', ring)  -- quarantined since it joined the ring: to the slow lane, then draw again
      redis.call('RPUSH', qring, id)
    else
      local s = settings_of(group, id)
      local st = redis.call('HMGET', state, curf, nf)
      local new_turn = st[1] ~= id
      local quantum = K * s.weight / math.max(group_meta(group).wmax, s.weight)
      local park_until, why, deficit = nil, nil, nil
      local hold = slow and over_slot_share(group, id)
      if not hold and s.max_in_flight and (tonumber(redis.call('HGET', G .. GK.inflight, id)) or 0) >= s.max_in_flight then
        park_until, why = '+inf', 'capped'
      elseif not hold and quantum < K then
        if new_turn then
          deficit = tonumber(redis.call('HINCRBYFLOAT', G .. GK.deficit, id, quantum))
        else
          deficit = tonumber(redis.call('HGET', G .. GK.deficit, id)) or 1
        end
      end
      if s.rate and not hold and not park_until and not (deficit and deficit < 1) then
        now = now or now_ms()
        park_until, why = take_token(G, id, s.rate, s.burst, now), 'throttled'
      end
      if hold then
        redis.call('LMOVE', r, r, 'LEFT', 'RIGHT')  -- slow, and holding its share of the slots: not now
        redis.call('HSET', state, curf, '', nf, 0)
      elseif park_until then
        redis.call('LPOP', r)
        redis.call('HSET', state, curf, '', nf, 0)
        redis.call('HDEL', G .. GK.deficit, id)  -- a parked tenant's turn is over; it earns anew when back
        redis.call('ZADD', G .. GK.parked, park_until, id)
        redis.call('HINCRBY', G .. GK.limited, id .. '\t' .. why, 1)
      elseif deficit and deficit < 1 then
        redis.call('LMOVE', r, r, 'LEFT', 'RIGHT')  -- its weight has not earned a job this turn yet
        redis.call('HSET', state, curf, '', nf, 0)
      else
        local doc = redis.call('LPOP', list)
        if not doc then
          redis.call('LPOP', r)  -- an emptied list still in the ring: heal and draw again
          redis.call('HSET', state, curf, '', nf, 0)
          redis.call('HDEL', G .. GK.deficit, id)
        else
          local n = 1
          if not new_turn then n = (tonumber(st[2]) or 0) + 1 end
          if deficit then
            deficit = deficit - 1
            redis.call('HSET', G .. GK.deficit, id, deficit)
          end
          if redis.call('LLEN', list) == 0 then
            redis.call('LPOP', r)
            redis.call('HSET', state, curf, '', nf, 0)
            redis.call('HDEL', G .. GK.deficit, id)
          elseif slow and healthy_again(group, id, now or now_ms()) then
            redis.call('LPOP', qring)  -- its failures aged out, its run time share fell: back to the healthy ring
            redis.call('SREM', G .. GK.quarantined, id)
            redis.call('HDEL', G .. GK.qreason, id)
            redis.call('RPUSH', ring, id)
            redis.call('HSET', state, curf, '', nf, 0)
          elseif n >= K or (deficit and deficit < 1) then
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
            return {id, doc, counts[1], counts[2], member, counts[3]}
          end
          -- a copy of a job held now (see lib.lua's lease): dropped; draw again
        end
      end
    end
  end
  return false
end

#!lua flags=no-cluster,allow-oom
-- The standalone hot path: acknowledge every job finished since the last call and reserve up to as
-- many jobs as the worker has free slots, in one round trip (never more: no prefetch, so a busy
-- process never hoards jobs an idle one could run).
-- KEYS[1] active set   KEYS[2] served-names set   KEYS[3] served weights hash (name -> weight or rank)
-- ARGV[1] key prefix   ARGV[2] the lease in ms   ARGV[3] '1' = strict
-- ARGV[4] the tenant group's served name ('' = none)   ARGV[5..10] the tenant group (see read_group)
-- ARGV[11] this call's holder tag, `<worker>:<call>` (the n-th job reserved gets `<holder>.<n>`)
-- ARGV[12] A, the number of acknowledgements, then A triples: served name ('@<queuePrefix>' = the
--   tenant group), reservation member (`<job key>\t<tag>`, see lib.lua's lease), wait bucket
--   (-1 = unknown)
-- then C, the most jobs to reserve, then C numbers u, uniform in [0, 1), one per job drawn
-- Per-queue keys are derived from the prefix (legal on standalone only; the cluster path uses
-- reserve_one.lua). Candidates are the served names in the active set, so queues without work cost
-- nothing. Each job is drawn on its own, by the same rule as one job at a time: a weighted draw
-- among the candidates serves what the first non-empty queue of a fresh weighted order would (see
-- fairway/queue/protocol/scheduling.py), strict mode takes the lowest rank, and the tenant ring pops with its
-- K in a row and its quarantine lane. The weights hash holds every served name's effective weight
-- (written with the set, in one transaction).
-- Returns a flat array, seven entries per job reserved: served name, document, attempts, tenant (or
-- false), lost, reservation member, when it became ready again (ms; false: as its document says). It runs when Redis is out of memory (allow-oom): taking and acknowledging jobs is
-- what frees memory.
-- #include tenant_ring.lua
-- #include tenant_lib.lua
local prefix = ARGV[1]
local group_name = ARGV[4]
local group, G = nil, nil
if group_name ~= '' then
  group = read_group(ARGV, 5)
  G = group.G
end

local holder = ARGV[11]
local acks = tonumber(ARGV[12])
for i = 13, 12 + 3 * acks, 3 do
  if group and ARGV[i] == group_name then
    ack_tenant(G, ARGV[i + 1], tonumber(ARGV[i + 2]), group_meta(group).any)
  else
    ack_job(queue_key(prefix, ARGV[i], QK.reserved), queue_key(prefix, ARGV[i], QK.leased),
      queue_key(prefix, ARGV[i], QK.attempts), ARGV[i + 1])
  end
end
local wanted_at = 13 + 3 * acks
local wanted = tonumber(ARGV[wanted_at])

local out = {}
local candidates = redis.call('SINTER', KEYS[1], KEYS[2])
if #candidates == 0 or wanted == 0 then return out end
local raw = redis.call('HMGET', KEYS[3], unpack(candidates))
local weights = {}
for i = 1, #candidates do weights[i] = tonumber(raw[i]) end

local strict = ARGV[3] == '1'
local deadline = now_ms() + tonumber(ARGV[2])

-- One job from candidate `pick`, or nil when it has none (it then leaves the active set).
local function take(pick, u, tag)
  local q = candidates[pick]
  if group and q == group_name then
    if redis.call('EXISTS', G .. GK.paused) == 0 then
      local got = pop_tenant(group, u, deadline, tag)
      -- A group with parked tenants stays active: their jobs come back without an enqueue.
      if redis.call('LLEN', G .. GK.ring) + redis.call('LLEN', G .. GK.qring) == 0
          and redis.call('ZCARD', G .. GK.parked) == 0 then
        redis.call('SREM', KEYS[1], q)
      end
      if got then return {q, got[2], got[3], got[1], got[4], got[5], got[6]} end
    end
  elseif redis.call('EXISTS', queue_key(prefix, q, QK.paused)) == 0 then
    local doc = redis.call('LPOP', queue_key(prefix, q, QK.ready))
    while doc do
      -- A queue this empties stays in the active set until a draw finds it empty: one call less
      -- per job, one extra only when a queue runs dry.
      redis.call('LPOP', queue_key(prefix, q, QK.notify))
      local jk = job_key(doc)
      local member = lease(queue_key(prefix, q, QK.reserved), queue_key(prefix, q, QK.leased), jk, tag, doc, deadline)
      if member then
        local counts = count_attempt(queue_key(prefix, q, QK.attempts), jk)
        return {q, doc, counts[1], false, counts[2], member, counts[3]}
      end
      doc = redis.call('LPOP', queue_key(prefix, q, QK.ready))  -- a copy of a job held now: dropped
    end
    redis.call('SREM', KEYS[1], q)
  end
  return nil
end

for j = 1, wanted do
  local u = tonumber(ARGV[wanted_at + j])
  local got = nil
  while got == nil and #candidates > 0 do
    local pick = 1
    if strict then
      for i = 2, #candidates do
        if weights[i] < weights[pick] then pick = i end
      end
    else
      local total = 0
      for i = 1, #candidates do total = total + weights[i] end
      local target, low = u * total, 0
      pick = #candidates
      for i = 1, #candidates do
        if target < low + weights[i] then pick = i; break end
        low = low + weights[i]
      end
      -- Where u fell inside the pick's interval is again uniform: reuse it if the pick has no work.
      u = math.min(math.max((target - low) / weights[pick], 0), 0.999999999)
    end
    got = take(pick, u, holder .. '.' .. j)
    if got == nil then
      table.remove(candidates, pick)
      table.remove(weights, pick)
    end
  end
  if got == nil then break end
  for k = 1, 7 do out[#out + 1] = got[k] end
end
return out

#!lua flags=no-cluster,allow-oom
-- The standalone hot path: acknowledge the job just finished and reserve the next, in one round trip.
-- KEYS[1] active set   KEYS[2] served-names set   KEYS[3] served weights hash (name -> weight or rank)
-- ARGV[1] key prefix   ARGV[2] retry_after in ms   ARGV[3] u, uniform in [0, 1)   ARGV[4] '1' = strict
-- ARGV[5] served name of the finished job ('' = none; '@<queuePrefix>' = the tenant group)
-- ARGV[6] its member   ARGV[7] its wait bucket (-1 = unknown)
-- ARGV[8] the tenant group's served name ('' = none)   ARGV[9..13] the tenant group (see read_group)
-- Per-queue keys are derived from the prefix (legal on standalone only; the cluster path uses
-- reserve_one.lua). Candidates are the served names in the active set, so queues without work cost
-- nothing. A weighted draw among them serves what the first non-empty queue of a fresh weighted order
-- would (see fairway/queue/scheduling.py); strict mode takes the lowest rank. The weights hash holds
-- every served name's effective weight (written with the set, in one transaction).
-- Returns {served name, document, attempts, tenant-or-false, lost} or false. It runs when Redis is out of
-- memory (allow-oom): taking and acknowledging jobs is what frees memory.
-- #include tenant_lib.lua
local prefix = ARGV[1]
local group_name = ARGV[8]
local group = read_group(ARGV, 9)
local G = group.G

if ARGV[5] ~= '' and ARGV[5] == group_name then
  ack_tenant(G, ARGV[6], tonumber(ARGV[7]))
elseif ARGV[5] ~= '' then
  ack_job(queue_key(prefix, ARGV[5], QK.reserved), queue_key(prefix, ARGV[5], QK.attempts), ARGV[6])
end

local candidates = redis.call('SINTER', KEYS[1], KEYS[2])
if #candidates == 0 then return false end
local raw = redis.call('HMGET', KEYS[3], unpack(candidates))
local weights = {}
for i = 1, #candidates do weights[i] = tonumber(raw[i]) end

local u = tonumber(ARGV[3])
local strict = ARGV[4] == '1'
local deadline = now_ms() + tonumber(ARGV[2])

while #candidates > 0 do
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
  local q = candidates[pick]
  if q == group_name then
    if redis.call('EXISTS', G .. GK.paused) == 0 then
      local got = pop_tenant(group, u, deadline)
      if got then
        if redis.call('LLEN', G .. GK.ring) + redis.call('LLEN', G .. GK.qring) == 0 then
          redis.call('SREM', KEYS[1], q)
        end
        return {q, got[2], got[3], got[1], got[4]}
      end
      redis.call('SREM', KEYS[1], q)
    end
  elseif redis.call('EXISTS', queue_key(prefix, q, QK.paused)) == 0 then
    local doc = redis.call('LPOP', queue_key(prefix, q, QK.ready))
    if doc then
      -- A queue this empties stays in the active set until a draw finds it empty (below): one call
      -- less per job, one extra only when a queue runs dry.
      redis.call('LPOP', queue_key(prefix, q, QK.notify))
      local counts = count_attempt(queue_key(prefix, q, QK.attempts), doc)
      redis.call('ZADD', queue_key(prefix, q, QK.reserved), deadline, doc)
      return {q, doc, counts[1], false, counts[2]}
    end
    redis.call('SREM', KEYS[1], q)
  end
  table.remove(candidates, pick)
  table.remove(weights, pick)
end
return false

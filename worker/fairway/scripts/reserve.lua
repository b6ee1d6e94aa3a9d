#!lua flags=no-cluster
-- The standalone hot path: acknowledge the job just finished and reserve the next, in one round trip.
-- KEYS[1] active set   KEYS[2] served-queues set   KEYS[3] served weights hash (queue -> weight or rank)
-- ARGV[1] key prefix   ARGV[2] retry_after in ms   ARGV[3] u, uniform in [0, 1)   ARGV[4] '1' = strict
-- ARGV[5] queue of the finished job ('' = none; '@<queuePrefix>' = the tenant group)   ARGV[6] its member
-- ARGV[7] the tenant group's name in the served set ('' = none)   ARGV[8] its key prefix G
-- ARGV[9] k (most jobs in a row per tenant)   ARGV[10] quarantine failures   ARGV[11] window ms
-- ARGV[12] quarantine sample rate   ARGV[13] the finished job's wait bucket (-1 = unknown)
-- Per-queue keys are derived from the prefix (legal on standalone only; the cluster path uses
-- reserve_one.lua). Candidates are the served queues in the active set, so queues without work cost
-- nothing. A weighted draw among them serves what the first non-empty queue of a fresh weighted order
-- would (see fairway/scheduling.py); strict mode takes the lowest rank.
-- Returns {queue, document, attempts, tenant-or-false} or false.
-- #include tenant_lib.lua
local prefix = ARGV[1]
local group, G = ARGV[7], ARGV[8]
local function key(q, suffix) return prefix .. ':{' .. q .. '}:' .. suffix end

if ARGV[5] ~= '' and ARGV[5] == group then
  ack_tenant(G, ARGV[6], tonumber(ARGV[13]))
elseif ARGV[5] ~= '' then
  if redis.call('ZREM', key(ARGV[5], 'reserved'), ARGV[6]) == 1 then
    redis.call('HDEL', key(ARGV[5], 'attempts'), redis.sha1hex(ARGV[6]))
  end
end

local candidates = redis.call('SINTER', KEYS[1], KEYS[2])
if #candidates == 0 then return false end
local raw = redis.call('HMGET', KEYS[3], unpack(candidates))
local weights = {}
for i = 1, #candidates do weights[i] = tonumber(raw[i]) or 1 end

local u = tonumber(ARGV[3])
local strict = ARGV[4] == '1'
local t = redis.call('TIME')
local deadline = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000) + tonumber(ARGV[2])

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
  if q == group then
    if redis.call('EXISTS', G .. 'paused') == 0 then
      local got = pop_tenant(G, tonumber(ARGV[9]), tonumber(ARGV[10]), tonumber(ARGV[11]), tonumber(ARGV[12]), u,
                             deadline)
      if got then
        if redis.call('LLEN', G .. 'ring') + redis.call('LLEN', G .. 'qring') == 0 then
          redis.call('SREM', KEYS[1], q)
        end
        return {q, got[2], got[3], got[1]}
      end
      redis.call('SREM', KEYS[1], q)
    end
  elseif redis.call('EXISTS', key(q, 'paused')) == 0 then
    local doc = redis.call('LPOP', key(q, 'ready'))
    if doc then
      -- A queue this empties stays in the active set until a draw finds it empty (below): one call
      -- less per job, one extra only when a queue runs dry.
      redis.call('LPOP', key(q, 'notify'))
      local attempts = redis.call('HINCRBY', key(q, 'attempts'), redis.sha1hex(doc), 1)
      redis.call('ZADD', key(q, 'reserved'), deadline, doc)
      return {q, doc, attempts, false}
    end
    redis.call('SREM', KEYS[1], q)
  end
  table.remove(candidates, pick)
  table.remove(weights, pick)
end
return false

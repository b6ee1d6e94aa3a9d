-- Start a chain (docs/batches.md, "Chains"): its steps, each a batch (`<chain id>.<step>`), written in
-- one atomic step; the first step's jobs are ready at once, each later step's documents wait in the
-- step before's hash (`then`) and are made due when every job of that step succeeded.
-- KEYS[1] <family base>batch:<chain id>.1 (names the family's slot)   KEYS[2] the active set, KEYS[3]
-- the registry (both optional: standalone Redis only)
-- ARGV[1] the family's base   ARGV[2] its served name   ARGV[3] the tenant id ('' for a queue)
-- ARGV[4] the documents' queue   ARGV[5] how long each step's figures are kept once it is done (ms)
-- ARGV[6] the chain id   ARGV[7] the number of steps, then for each step: its number of jobs, then
-- its job documents (at most LIMIT.documents_per_call documents in all)
-- Returns the number of steps. Refuses (writing nothing) with BAD_KEYS, BAD_BATCH, TOO_MANY, or a
-- document's refusal (naming its step and position).
-- #include tenant_ring.lua
-- #include producer_lib.lua
local base, name, tenant, queue, ttl, chain = ARGV[1], ARGV[2], ARGV[3], ARGV[4], ARGV[5], ARGV[6]
if KEYS[1] ~= base .. QK.batch .. chain .. '.1' then
  return redis.error_reply('BAD_KEYS KEYS[1] must be ARGV[1] .. ' .. string.format('%q', QK.batch) .. ' .. <chain id> .. ".1"')
end
local tid = tenant ~= '' and tenant or nil
local steps, at = tonumber(ARGV[7]), 8
if not steps or steps < 1 then return redis.error_reply('BAD_BATCH a chain needs at least one step') end
if #ARGV - 7 - steps > LIMIT.documents_per_call then
  return redis.error_reply('TOO_MANY a chain holds at most ' .. LIMIT.documents_per_call .. ' jobs in all')
end
local docs = {}
for step = 1, steps do
  local count = tonumber(ARGV[at])
  if not count or count < 1 then return redis.error_reply('BAD_BATCH step ' .. step .. ' of the chain has no jobs') end
  docs[step] = {}
  for i = 1, count do
    local doc = ARGV[at + i]
    if doc == nil then return redis.error_reply('BAD_BATCH the chain lists fewer documents than it counts') end
    local refusal, parsed = document_refusal(doc, queue, tid)
    if refusal then return redis.error_reply(refusal .. ' (step ' .. step .. ', job ' .. i .. ')') end
    if type(parsed.unique_key) == 'string' then
      return redis.error_reply('BAD_BATCH a chain job cannot be unique (step ' .. step .. ', job ' .. i .. ')')
    end
    docs[step][i] = {doc, parsed.id}
  end
  at = at + count + 1
end
if at ~= #ARGV + 1 then return redis.error_reply('BAD_BATCH the chain lists more documents than it counts') end
local now, prefix = now_ms(), tid and (tid .. '\t') or ''
for step = 1, steps do
  local key = base .. QK.batch .. chain .. '.' .. step
  local n = #docs[step]
  redis.call('HSET', key, 'total', n, 'pending', n, 'sealed', '1', 'ttl_ms', ttl, 'member_prefix', prefix,
    'opened_at', now)
  if step < steps then
    local later = {}
    for i = 1, #docs[step + 1] do later[i] = docs[step + 1][i][1] end
    redis.call('HSET', key, 'then', cjson.encode(later), 'next', chain .. '.' .. (step + 1))
  end
end
for i = 1, #docs[1] do
  local doc, id = docs[1][i][1], docs[1][i][2]
  redis.call('HSET', base .. QK.attempts, prefix .. id .. BATCH, chain .. '.1')
  if tid then
    push_tenant(base, tid, doc, now)
  else
    redis.call('RPUSH', base .. QK.ready, doc)
    redis.call('RPUSH', base .. QK.notify, '1')
  end
end
if KEYS[2] then redis.call('SADD', KEYS[2], name) end
if KEYS[3] then redis.call('SADD', KEYS[3], name) end
return steps

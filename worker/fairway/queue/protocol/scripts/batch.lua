-- Add jobs to a batch, or seal it (docs/batches.md); each call one atomic step: a refusal writes nothing.
-- KEYS[1] <family base>batch:<batch id> (names the family's slot: a batch's jobs share one queue or one
-- tenant group)   KEYS[2] the active set, KEYS[3] the registry (both optional: standalone Redis only)
-- ARGV[1] 'add' or 'seal'   ARGV[2] the family's base   ARGV[3] its served name   ARGV[4] the tenant id
-- ('' for a queue)   ARGV[5] the documents' queue
-- add:  ARGV[6] how long a batch not sealed yet is kept (ms)   ARGV[7..] job documents (1 to
--       LIMIT.documents_per_call): each made ready, and marked in `attempts` (`<job key>\tbatch`) so
--       settling it for good counts it in the batch (lib.lua's forget_counts). Returns the total so far.
-- seal: ARGV[6] how long the batch is kept once done (ms)   ARGV[7] the on_complete document or ''
--       ARGV[8] the on_success document or ''. Returns 1, or 2 when every job had ended already (its
--       callbacks are due now).
-- Refuses with BAD_KEYS, BAD_BATCH, NO_DOCUMENTS, TOO_MANY, or a document's refusal (as enqueue.lua's).
-- #include tenant_ring.lua
-- #include producer_lib.lua
local key, op, base, name, tenant, queue = KEYS[1], ARGV[1], ARGV[2], ARGV[3], ARGV[4], ARGV[5]
if string.sub(key, 1, #base + #QK.batch) ~= base .. QK.batch then
  return redis.error_reply('BAD_KEYS KEYS[1] must be ARGV[2] .. ' .. string.format('%q', QK.batch) .. ' .. <batch id>')
end
local tid = tenant ~= '' and tenant or nil
local sealed = redis.call('HGET', key, 'sealed') == '1'
if sealed then
  return redis.error_reply('BAD_BATCH the batch is sealed: add its jobs and callbacks before sealing it, once')
end
if op == 'add' then
  local count = #ARGV - 6
  if count < 1 then return redis.error_reply('NO_DOCUMENTS the call has no documents') end
  if count > LIMIT.documents_per_call then
    return redis.error_reply('TOO_MANY ' .. count .. ' documents in one call; send at most ' .. LIMIT.documents_per_call)
  end
  local ids = {}
  for i = 7, #ARGV do
    local refusal, parsed = document_refusal(ARGV[i], queue, tid)
    if refusal then return redis.error_reply(refusal .. ' (document ' .. (i - 6) .. ')') end
    if type(parsed.unique_key) == 'string' then
      return redis.error_reply('BAD_BATCH a batch job cannot be unique (document ' .. (i - 6) .. ')')
    end
    ids[i] = parsed.id
  end
  local now, batch_id = now_ms(), string.sub(key, #base + #QK.batch + 1)
  for i = 7, #ARGV do
    redis.call('HSET', base .. QK.attempts, (tid and (tid .. '\t') or '') .. ids[i] .. BATCH, batch_id)
    if tid then
      push_tenant(base, tid, ARGV[i], now)
    else
      redis.call('RPUSH', base .. QK.ready, ARGV[i])
      redis.call('RPUSH', base .. QK.notify, '1')
    end
  end
  redis.call('HSETNX', key, 'opened_at', now)
  redis.call('HINCRBY', key, 'pending', count)
  local total = redis.call('HINCRBY', key, 'total', count)
  redis.call('PEXPIRE', key, tonumber(ARGV[6]))
  if KEYS[2] then redis.call('SADD', KEYS[2], name) end
  if KEYS[3] then redis.call('SADD', KEYS[3], name) end
  return total
end
if op ~= 'seal' then return redis.error_reply('BAD_BATCH ARGV[1] must be add or seal') end
if tonumber(redis.call('HGET', key, 'total') or '0') == 0 then
  return redis.error_reply('BAD_BATCH a batch needs at least one job: add its jobs, then seal it')
end
for i = 7, 8 do
  if ARGV[i] ~= '' then
    local refusal = document_refusal(ARGV[i], queue, tid)
    if refusal then return redis.error_reply(refusal .. ' (the ' .. (i == 7 and 'on_complete' or 'on_success') .. ' callback)') end
    redis.call('HSET', key, i == 7 and 'on_complete' or 'on_success', ARGV[i])
  end
end
redis.call('HSET', key, 'sealed', '1', 'ttl_ms', ARGV[6], 'member_prefix', tid and (tid .. '\t') or '')
redis.call('PERSIST', key)
if tonumber(redis.call('HGET', key, 'pending')) <= 0 then
  finish_batch(base, key)
  return 2
end
return 1

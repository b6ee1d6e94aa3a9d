-- Enqueue tenant jobs, one or many for the same tenant (the documented script; see docs/tenants.md).
-- KEYS[1] G .. 'ring' (names the group's slot)
-- KEYS[2] the active set, KEYS[3] the registry of served names (both optional: standalone Redis only)
-- ARGV[1] G, the group's key prefix   ARGV[2] tenant id   ARGV[3] delay in ms (0 = now)
-- ARGV[4] the group's name in the active set ('@<queuePrefix>')   ARGV[5..] job documents
-- Returns how many documents were enqueued; refuses (writing nothing) with BAD_KEYS, BAD_TENANT,
-- BAD_DELAY, TOO_MANY, TOO_LARGE or BAD_DOCUMENT (the latter two name the document's position).
-- #include tenant_lib.lua
-- #include producer_lib.lua
local G, id = ARGV[1], ARGV[2]
if KEYS[1] ~= G .. GK.ring or string.sub(ARGV[4] or '', 1, 1) ~= '@' then
  return redis.error_reply('BAD_KEYS KEYS[1] must be ARGV[1] .. ' .. string.format('%q', GK.ring) ..
    ' and ARGV[4] the group name @<queuePrefix> (docs/tenants.md)')
end
local delay, refusal = read_delay(ARGV[3])
refusal = refusal or tenant_refusal(id)
if refusal then return redis.error_reply(refusal) end
if #ARGV - 4 > LIMIT.documents_per_call then
  return redis.error_reply('TOO_MANY ' .. (#ARGV - 4) .. ' documents in one call; send at most ' ..
    LIMIT.documents_per_call .. ' per call')
end
for i = 5, #ARGV do
  refusal = document_refusal(ARGV[i])
  if refusal then return redis.error_reply(refusal .. ' (document ' .. (i - 4) .. ')') end
end
local now = now_ms()
for i = 5, #ARGV do
  if delay > 0 then
    redis.call('ZADD', G .. GK.delayed, now + delay, id .. '\t' .. ARGV[i])
  else
    push_tenant(G, id, ARGV[i], now)
  end
end
if KEYS[3] then redis.call('SADD', KEYS[3], ARGV[4]) end
if delay <= 0 and KEYS[2] then redis.call('SADD', KEYS[2], ARGV[4]) end
return #ARGV - 4

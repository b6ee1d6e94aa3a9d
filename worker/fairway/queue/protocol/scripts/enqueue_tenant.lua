-- Enqueue tenant jobs, one or many for the same tenant (the documented script; docs/protocol.md).
-- KEYS[1] G .. 'ring' (names the group's slot)
-- KEYS[2] the active set, KEYS[3] the registry of served names (both optional: standalone Redis only)
-- ARGV[1] G, the group's key prefix ('<prefix>:{tenants:<queuePrefix>}:')   ARGV[2] tenant id
-- ARGV[3] delay: whole ms as digits (0 = now)   ARGV[4] the group's served name, '@<queuePrefix>'
-- ARGV[5..] job documents (1 to LIMIT.documents_per_call), each with "tenant": ARGV[2] and
-- "queue": <queuePrefix> .. ARGV[2]
-- Delayed documents go to the group's delayed set (the tenant joins the ring when they are due; the
-- group is named in the registry at once, in the active set only then); when they are the earliest
-- there, one token goes on the group's wake list (unless one waits there), to wake an idle worker.
-- Returns how many documents were enqueued; when a unique document (`unique_key`) found its key held
-- by another job (and was not written), an array instead, one entry per document: 1 (enqueued) or
-- the id of the job holding its key. Refuses (writing nothing) with BAD_KEYS, BAD_DELAY,
-- BAD_TENANT, NO_DOCUMENTS, TOO_MANY, or for a document (naming its position) TOO_LARGE,
-- BAD_DOCUMENT, BAD_ID, BAD_HANDLER, MISMATCH or BAD_UNIQUE.
-- #include tenant_ring.lua
-- #include producer_lib.lua
local G, id = ARGV[1] or '', ARGV[2] or ''
local queue_prefix = string.match(G, '{tenants:([^{}]*)}:$')
if KEYS[1] ~= G .. GK.ring or queue_prefix == nil or ARGV[4] ~= '@' .. queue_prefix then
  return redis.error_reply('BAD_KEYS KEYS[1] must be ARGV[1] .. ' .. string.format('%q', GK.ring) ..
    ', ARGV[1] end in {tenants:<queuePrefix>}: and ARGV[4] be @<queuePrefix> (docs/protocol.md)')
end
local delay, refusal = read_delay(ARGV[3])
refusal = refusal or tenant_refusal(id)
if refusal then return redis.error_reply(refusal) end
local count = #ARGV - 4
if count < 1 then
  return redis.error_reply('NO_DOCUMENTS the call has no documents; send 1 to ' .. LIMIT.documents_per_call)
end
if count > LIMIT.documents_per_call then
  return redis.error_reply('TOO_MANY ' .. count .. ' documents in one call; send at most ' ..
    LIMIT.documents_per_call .. ' per call')
end
local uniques = {}  -- position -> parsed document, for unique documents only
for i = 5, #ARGV do
  local parsed
  refusal, parsed = document_refusal(ARGV[i], queue_prefix .. id, id)
  if refusal then return redis.error_reply(refusal .. ' (document ' .. (i - 4) .. ')') end
  if type(parsed.unique_key) == 'string' then uniques[i] = parsed end
end
-- Unique documents claim their keys (`unique:<tenant id>:<key>`): one whose key is held is left out.
local written, replies, duplicates = {}, {}, false
for i = 5, #ARGV do
  local holder = true
  if uniques[i] then
    local parsed = uniques[i]
    holder = claim_unique(G .. GK.unique .. id .. ':' .. parsed.unique_key, parsed, id .. '\t' .. parsed.id,
      G .. GK.attempts)
  end
  if holder == true then
    written[#written + 1] = ARGV[i]
    replies[i - 4] = 1
  else
    replies[i - 4] = holder
    duplicates = true
  end
end
local now = now_ms()
if delay > 0 then
  local members = {}
  for i = 1, #written do members[i] = id .. '\t' .. written[i] end
  if #members > 0 then schedule(G .. GK.delayed, now + delay, members, G .. GK.wake, nil) end
else
  for i = 1, #written do push_tenant(G, id, written[i], now) end
end
if #written > 0 then
  if KEYS[3] then redis.call('SADD', KEYS[3], ARGV[4]) end
  if delay <= 0 and KEYS[2] then redis.call('SADD', KEYS[2], ARGV[4]) end
end
if duplicates then return replies end
return count

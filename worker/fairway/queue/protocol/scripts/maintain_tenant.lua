#!lua flags=allow-oom
-- Housekeeping for a tenant group (timer and idle only): due delayed jobs and expired reservations go
-- back to their tenant's list (bounded per call); a group with work is (re-)entered in the active set.
-- An expired reservation counts as lost, not as an attempt (see lib.lua's count_lost).
-- KEYS[1] G .. 'ring'   KEYS[2] the active set (optional: standalone only)
-- ARGV[1] G   ARGV[2] most jobs moved per kind   ARGV[3] the group's name
-- Returns {due moved, expired moved, active tenants}.
-- #include tenant_lib.lua
local G, limit = ARGV[1], tonumber(ARGV[2])
local now = now_ms()
local due = redis.call('ZRANGEBYSCORE', G .. GK.delayed, '-inf', now, 'LIMIT', 0, limit)
for i = 1, #due do
  redis.call('ZREM', G .. GK.delayed, due[i])
  local id, doc = split_member(due[i])
  push_tenant(G, id, doc, now)
end
local expired = redis.call('ZRANGEBYSCORE', G .. GK.reserved, '-inf', now, 'LIMIT', 0, limit)
for i = 1, #expired do
  local _, doc = expire(G .. GK.reserved, G .. GK.leased, G .. GK.attempts, expired[i])
  local id = split_member(expired[i])
  leave_flight(G, id)
  if doc then push_tenant(G, id, doc, now) end
end
local active = redis.call('LLEN', G .. GK.ring) + redis.call('LLEN', G .. GK.qring)
if KEYS[2] and active > 0 then redis.call('SADD', KEYS[2], ARGV[3]) end
return {#due, #expired, active}

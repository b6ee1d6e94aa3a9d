#!lua flags=allow-oom
-- Housekeeping for a tenant group (timer and idle only): due delayed jobs and expired reservations go
-- back to their tenant's list (bounded per call), parked tenants whose next rate token is due back to
-- their ring; a group with work (parked tenants included) is (re-)entered in the active set.
-- An expired reservation counts as lost, not as an attempt (see lib.lua's count_lost).
-- KEYS[1] G .. 'ring'   KEYS[2] the active set (optional: standalone only)
-- It also counts each tenant's run time (tenant_lib.lua's account_run_time), which may quarantine a
-- tenant whose jobs take more than the group's share of it while others wait.
-- ARGV[1..6] the tenant group (see read_group)   ARGV[7] most jobs moved per kind   ARGV[8] the group's name
-- Returns {due moved, expired moved, active tenants, ms until the earliest delayed job left is due
-- (-1: none)}.
-- #include tenant_ring.lua
-- #include tenant_lib.lua
local group = read_group(ARGV, 1)
local G, limit = group.G, tonumber(ARGV[7])
local now = now_ms()
account_run_time(group, now)
local due = redis.call('ZRANGEBYSCORE', G .. GK.delayed, '-inf', now, 'LIMIT', 0, limit)
for i = 1, #due do
  redis.call('ZREM', G .. GK.delayed, due[i])
  local id, doc = split_member(due[i])
  push_tenant(G, id, doc, now)
end
local expired = redis.call('ZRANGEBYSCORE', G .. GK.reserved, '-inf', now, 'LIMIT', 0, limit)
for i = 1, #expired do
  local _, doc = expire(G .. GK.reserved, G .. GK.leased, G .. GK.attempts, expired[i], now)
  local id = split_member(expired[i])
  leave_flight(G, id)
  if doc then push_tenant(G, id, doc, now) end
end
unpark_due(group, now)
local active = redis.call('LLEN', G .. GK.ring) + redis.call('LLEN', G .. GK.qring) + redis.call('ZCARD', G .. GK.parked)
if KEYS[2] and active > 0 then redis.call('SADD', KEYS[2], ARGV[8]) end
local first = redis.call('ZRANGE', G .. GK.delayed, 0, 0, 'WITHSCORES')
return {#due, #expired, active, first[2] and math.max(0, tonumber(first[2]) - now) or -1}

-- Serve a paused tenant again: it rejoins its ring if it has ready jobs and is not in one, and idle
-- workers are woken (one notify token per waiting job, at most 1,000).
-- KEYS[1] G .. 'ring' (names the group's slot)   KEYS[2] the active set (optional: standalone only)
-- ARGV[1] G   ARGV[2] tenant id   ARGV[3] the group's served name ('@<queuePrefix>')
-- Returns the tenant's waiting jobs, or -1 when it was not paused.
-- #include tenant_ring.lua
-- #include tenant_lib.lua
local G, id = ARGV[1], ARGV[2]
if redis.call('SREM', G .. GK.paused_tenants, id) == 0 then return -1 end
local waiting = redis.call('LLEN', G .. GK.t .. id)
if waiting > 0 then
  local parked = redis.call('ZSCORE', G .. GK.parked, id)  -- parked: it rejoins when unparked
  if not parked and not redis.call('LPOS', G .. GK.ring, id) and not redis.call('LPOS', G .. GK.qring, id) then
    join_ring(G, id)
  end
  local tokens = {}
  for i = 1, math.min(waiting, 1000) do tokens[i] = '1' end
  redis.call('RPUSH', G .. GK.notify, unpack(tokens))
  if KEYS[2] then redis.call('SADD', KEYS[2], ARGV[3]) end
end
return waiting

-- Enqueue tenant jobs, one or many for the same tenant (the documented script; see docs/tenants.md).
-- KEYS[1] G .. 'ring' (names the group's slot)   KEYS[2] the active set (optional: standalone only)
-- ARGV[1] G, the group's key prefix   ARGV[2] tenant id   ARGV[3] delay in ms (0 = now)
-- ARGV[4] the group's name in the active set ('@<queuePrefix>')   ARGV[5..] job documents
-- Returns how many documents were enqueued.
-- #include tenant_lib.lua
local G, id = ARGV[1], ARGV[2]
local now = now_ms()
local delay = tonumber(ARGV[3])
for i = 5, #ARGV do
  if delay > 0 then
    redis.call('ZADD', G .. GK.delayed, now + delay, id .. '\t' .. ARGV[i])
  else
    push_tenant(G, id, ARGV[i], now)
  end
end
if delay <= 0 and KEYS[2] then redis.call('SADD', KEYS[2], ARGV[4]) end
return #ARGV - 4

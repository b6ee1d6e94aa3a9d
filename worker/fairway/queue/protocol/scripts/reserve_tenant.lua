#!lua flags=allow-oom
-- Reserve the next tenant job (the Redis Cluster path; every key shares the group's slot).
-- KEYS[1] G .. 'ring'
-- ARGV[1..6] the tenant group (see read_group)   ARGV[7] u, uniform in [0, 1)   ARGV[8] the lease in ms
-- ARGV[9] the holder tag (`<worker>:<call>`, see lib.lua's lease)
-- Returns {tenant id, document, attempts, lost, reservation member, ready again at (ms) or false} or false.
-- #include tenant_ring.lua
-- #include tenant_lib.lua
local group = read_group(ARGV, 1)
if redis.call('EXISTS', group.G .. GK.paused) == 1 then return false end
return pop_tenant(group, tonumber(ARGV[7]), now_ms() + tonumber(ARGV[8]), ARGV[9])

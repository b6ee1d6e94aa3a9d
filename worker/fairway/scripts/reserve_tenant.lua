-- Reserve the next tenant job (the Redis Cluster path; every key shares the group's slot).
-- KEYS[1] G .. 'ring'
-- ARGV[1] G   ARGV[2] k   ARGV[3] quarantine failures   ARGV[4] window ms   ARGV[5] sample rate
-- ARGV[6] u, uniform in [0, 1)   ARGV[7] retry_after in ms
-- Returns {tenant id, document, attempts} or false.
-- #include tenant_lib.lua
if redis.call('EXISTS', ARGV[1] .. 'paused') == 1 then return false end
return pop_tenant(ARGV[1], tonumber(ARGV[2]), tonumber(ARGV[3]), tonumber(ARGV[4]), tonumber(ARGV[5]),
                  tonumber(ARGV[6]), now_ms() + tonumber(ARGV[7]))

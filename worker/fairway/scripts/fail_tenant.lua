-- Store a tenant job as failed for good, counting the failure for quarantine and the figures.
-- KEYS[1] G .. 'reserved'
-- ARGV[1] G   ARGV[2] member   ARGV[3] job id   ARGV[4] failure record (JSON)   ARGV[5] most records kept
-- ARGV[6] window ms   ARGV[7] quarantine failures   ARGV[8] wait bucket
-- #include tenant_lib.lua
local G, member = ARGV[1], ARGV[2]
local id = split_member(member)
local now = now_ms()
if redis.call('ZREM', G .. 'reserved', member) == 1 then leave_flight(G, id) end
redis.call('HDEL', G .. 'attempts', redis.sha1hex(member))
record_failure(G, id, now, tonumber(ARGV[6]), tonumber(ARGV[7]))
record_figures(G, id, now, 'f', tonumber(ARGV[8]))
redis.call('HSET', G .. 'failed', ARGV[3], ARGV[4])
redis.call('ZADD', G .. 'failed_index', now, ARGV[3])
local excess = redis.call('ZCARD', G .. 'failed_index') - tonumber(ARGV[5])
if excess > 0 then
  local oldest = redis.call('ZRANGE', G .. 'failed_index', 0, excess - 1)
  redis.call('ZREMRANGEBYRANK', G .. 'failed_index', 0, excess - 1)
  redis.call('HDEL', G .. 'failed', unpack(oldest))
end
return 1

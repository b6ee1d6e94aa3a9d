#!lua flags=no-cluster,allow-oom
-- Publish a worker configuration's served names and weights for reserve.lua (standalone only), and
-- register its served names (queues and tenant groups) for `fairway queues`. Runs when Redis is out of memory (allow-oom): a worker
-- must be able to start and drain a full Redis; what it writes is a few small keys.
-- KEYS[1] served-names set   KEYS[2] served weights hash   KEYS[3] queue registry
-- ARGV[1] seconds the served keys live (renewed by every refresh)   ARGV[2..] name, weight pairs
-- Returns the number of served names.
redis.call('DEL', KEYS[1], KEYS[2])
for i = 2, #ARGV, 2 do
  redis.call('SADD', KEYS[1], ARGV[i])
  redis.call('HSET', KEYS[2], ARGV[i], ARGV[i + 1])
  redis.call('SADD', KEYS[3], ARGV[i])
end
redis.call('EXPIRE', KEYS[1], tonumber(ARGV[1]))
redis.call('EXPIRE', KEYS[2], tonumber(ARGV[1]))
return (#ARGV - 1) / 2

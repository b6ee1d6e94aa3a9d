-- Housekeeping for one queue, run on a timer and when a worker goes idle, never per job:
-- due delayed jobs and expired reservations go back to ready (bounded per call), and a queue that
-- holds work is (re-)entered in the active set, which also heals producers that skipped the SADD.
-- KEYS[1] ready   KEYS[2] reserved   KEYS[3] delayed   KEYS[4] notify   KEYS[5] active (standalone only)
-- ARGV[1] most jobs moved per kind   ARGV[2] queue name
-- Returns {due moved, expired moved, ready length}.
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local limit = tonumber(ARGV[1])
local due = redis.call('ZRANGEBYSCORE', KEYS[3], '-inf', now, 'LIMIT', 0, limit)
for i = 1, #due do
  redis.call('ZREM', KEYS[3], due[i])
  redis.call('RPUSH', KEYS[1], due[i])
  redis.call('RPUSH', KEYS[4], '1')
end
local expired = redis.call('ZRANGEBYSCORE', KEYS[2], '-inf', now, 'LIMIT', 0, limit)
for i = 1, #expired do
  redis.call('ZREM', KEYS[2], expired[i])
  redis.call('RPUSH', KEYS[1], expired[i])
  redis.call('RPUSH', KEYS[4], '1')
end
local length = redis.call('LLEN', KEYS[1])
if KEYS[5] and length > 0 then redis.call('SADD', KEYS[5], ARGV[2]) end
return {#due, #expired, length}

-- Store a job as failed for good (tries used up, unknown handler, malformed document).
-- KEYS[1] reserved   KEYS[2] attempts   KEYS[3] failed hash   KEYS[4] failed index
-- ARGV[1] job document   ARGV[2] job id   ARGV[3] failure record (JSON)   ARGV[4] most records kept
local removed = redis.call('ZREM', KEYS[1], ARGV[1])
redis.call('HDEL', KEYS[2], redis.sha1hex(ARGV[1]))
local t = redis.call('TIME')
redis.call('HSET', KEYS[3], ARGV[2], ARGV[3])
redis.call('ZADD', KEYS[4], tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000), ARGV[2])
local excess = redis.call('ZCARD', KEYS[4]) - tonumber(ARGV[4])
if excess > 0 then
  local oldest = redis.call('ZRANGE', KEYS[4], 0, excess - 1)
  redis.call('ZREMRANGEBYRANK', KEYS[4], 0, excess - 1)
  redis.call('HDEL', KEYS[3], unpack(oldest))
end
return removed

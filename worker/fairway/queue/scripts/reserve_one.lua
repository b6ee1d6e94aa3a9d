-- Reserve the next job of one queue (the Redis Cluster path: every key here shares the queue's slot).
-- KEYS[1] ready   KEYS[2] reserved   KEYS[3] notify   KEYS[4] attempts   KEYS[5] paused
-- ARGV[1] retry_after in ms
-- Returns {document, attempts} or false.
if redis.call('EXISTS', KEYS[5]) == 1 then return false end
local doc = redis.call('LPOP', KEYS[1])
if not doc then return false end
redis.call('LPOP', KEYS[3])
local attempts = redis.call('HINCRBY', KEYS[4], redis.sha1hex(doc), 1)
redis.call('ZADD', KEYS[2], now_ms() + tonumber(ARGV[1]), doc)
return {doc, attempts}

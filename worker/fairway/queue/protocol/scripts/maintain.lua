#!lua flags=allow-oom
-- Housekeeping for one queue, run on a timer and when a worker goes idle, never per job:
-- due delayed jobs and expired reservations go back to ready (bounded per call), and a queue that
-- holds work is (re-)entered in the active set, which also heals producers that skipped the SADD.
-- An expired reservation means its worker vanished: the job is counted as lost, not as an attempt.
-- KEYS[1] ready   KEYS[2] reserved   KEYS[3] delayed   KEYS[4] notify   KEYS[5] attempts   KEYS[6] leased
-- KEYS[7] active (standalone only)
-- ARGV[1] most jobs moved per kind   ARGV[2] queue name
-- Returns {due moved, expired moved, ready length, ms until the earliest delayed job left is due (-1:
-- none)}: the worker moves it when its time comes, not at its next timer tick.
local now = now_ms()
local limit = tonumber(ARGV[1])
-- Move up to `limit` members of a sorted set whose time has come back to the ready list.
local function requeue(zset, lost)
  local members = redis.call('ZRANGEBYSCORE', zset, '-inf', now, 'LIMIT', 0, limit)
  for i = 1, #members do
    local doc = members[i]
    if lost then
      local _, held = expire(zset, KEYS[6], KEYS[5], members[i], now)
      doc = held
    else
      redis.call('ZREM', zset, members[i])
    end
    if doc then
      redis.call('RPUSH', KEYS[1], doc)
      redis.call('RPUSH', KEYS[4], '1')
    end
  end
  return #members
end
local due = requeue(KEYS[3], false)
local expired = requeue(KEYS[2], true)
local length = redis.call('LLEN', KEYS[1])
if KEYS[7] and length > 0 then redis.call('SADD', KEYS[7], ARGV[2]) end
local first = redis.call('ZRANGE', KEYS[3], 0, 0, 'WITHSCORES')
return {due, expired, length, first[2] and math.max(0, tonumber(first[2]) - now) or -1}

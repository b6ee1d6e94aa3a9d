#!lua flags=allow-oom
-- Put a failed attempt back for a retry, after a delay (backoff) or at once; attempts are kept.
-- KEYS[1] reserved   KEYS[2] delayed   KEYS[3] ready   KEYS[4] notify   KEYS[5] leased
-- KEYS[6] attempts   KEYS[7] active (standalone only)
-- ARGV[1] reservation member (`<job key>\t<tag>`)   ARGV[2] delay in ms   ARGV[3] queue name
-- ARGV[4] (optional) a hand-back's grace in ms: the worker does not know the job's handler; no try
-- is spent, unless the job's grace (from its first hand-back) is over.
-- Returns 1, 0 when the lease had run out and the job was already handed out again, or 2 when a
-- hand-back's grace is over (nothing changed: the worker fails the job).
local grace, now = tonumber(ARGV[4]), now_ms()
if grace and not within_grace(KEYS[6], ARGV[1], grace, now) then return 2 end
local jk, doc = unlease(KEYS[1], KEYS[5], ARGV[1])
if not jk then return 0 end
if grace then count_hand_back(KEYS[6], jk, now) end
local delay = tonumber(ARGV[2])
local ready_at = now + delay
mark_ready(KEYS[6], jk, ready_at)  -- its next wait starts when the backoff ends
if delay > 0 then
  redis.call('ZADD', KEYS[2], ready_at, doc)
else
  redis.call('RPUSH', KEYS[3], doc)
  redis.call('RPUSH', KEYS[4], '1')
  if KEYS[7] then redis.call('SADD', KEYS[7], ARGV[3]) end
end
return 1

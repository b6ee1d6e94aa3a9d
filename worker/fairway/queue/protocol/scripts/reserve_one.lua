#!lua flags=allow-oom
-- Reserve the next job of one queue (the Redis Cluster path: every key here shares the queue's slot).
-- KEYS[1] ready   KEYS[2] reserved   KEYS[3] notify   KEYS[4] attempts   KEYS[5] paused   KEYS[6] leased
-- ARGV[1] the lease in ms   ARGV[2] the holder tag (`<worker>:<call>`, see lib.lua's lease)
-- Returns {document, attempts, lost, reservation member, ready again at (ms) or false} or false.
if redis.call('EXISTS', KEYS[5]) == 1 then return false end
local deadline = now_ms() + tonumber(ARGV[1])
local doc = redis.call('LPOP', KEYS[1])
while doc do
  redis.call('LPOP', KEYS[3])
  local jk = job_key(doc)
  local member = lease(KEYS[2], KEYS[6], jk, ARGV[2], doc, deadline)
  if member then
    local counts = count_attempt(KEYS[4], jk)
    return {doc, counts[1], counts[2], member, counts[3]}
  end
  doc = redis.call('LPOP', KEYS[1])  -- a copy of a job held now: dropped (see lib.lua's lease)
end
return false

-- Enqueue one job document (the documented script any language may call). One atomic step: if it
-- returns an error, nothing was written.
-- KEYS[1] ready   KEYS[2] notify   KEYS[3] delayed
-- KEYS[4] active set, KEYS[5] queue registry (both optional: standalone Redis only)
-- ARGV[1] job document   ARGV[2] delay: whole ms as digits (0 = ready now)   ARGV[3] queue name
-- A delayed job that is now the earliest in `delayed` also pushes one token on `notify` when it holds
-- no more tokens than `ready` holds jobs (a wake-up: idle workers then wait for it exactly). Returns 1 when the job is ready now, 0 when it was
-- scheduled, or, for a unique job (`unique_key`) whose key another job holds, that job's id (a
-- string), writing nothing; refuses (writing nothing) with
-- BAD_DELAY, BAD_QUEUE, TOO_LARGE, BAD_DOCUMENT, BAD_ID, BAD_HANDLER, MISMATCH or BAD_UNIQUE.
-- #include producer_lib.lua
local delay, refusal = read_delay(ARGV[2])
local parsed
refusal = refusal or queue_refusal(ARGV[3])
if not refusal then refusal, parsed = document_refusal(ARGV[1], ARGV[3], nil) end
if refusal then return redis.error_reply(refusal) end
if type(parsed.unique_key) == 'string' then
  local base = string.sub(KEYS[1], 1, #KEYS[1] - #QK.ready)  -- the queue's keys share its slot
  local holder = claim_unique(base .. QK.unique .. parsed.unique_key, parsed, parsed.id, base .. QK.attempts)
  if holder ~= true then return holder end
end
if KEYS[5] then redis.call('SADD', KEYS[5], ARGV[3]) end
if delay > 0 then
  schedule(KEYS[3], now_ms() + delay, {ARGV[1]}, KEYS[2], KEYS[1])
  return 0
end
redis.call('RPUSH', KEYS[1], ARGV[1])
redis.call('RPUSH', KEYS[2], '1')
if KEYS[4] then redis.call('SADD', KEYS[4], ARGV[3]) end
return 1

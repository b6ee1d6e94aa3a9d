-- Acknowledge a finished job: drop its reservation and its attempt counter.
-- KEYS[1] reserved   KEYS[2] attempts
-- ARGV[1] job document
-- Returns 1, or 0 when the reservation had already expired (the job may run again elsewhere).
if redis.call('ZREM', KEYS[1], ARGV[1]) == 1 then
  redis.call('HDEL', KEYS[2], redis.sha1hex(ARGV[1]))
  return 1
end
return 0

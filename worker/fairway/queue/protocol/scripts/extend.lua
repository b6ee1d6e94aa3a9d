#!lua flags=allow-oom
-- Move a reservation's deadline out, for a job whose own timeout outlasts the worker's retryAfter:
-- a job must never be handed to a second worker while it still runs.
-- KEYS[1] the reserved set (a queue's, or a tenant group's)
-- ARGV[1] member (the document, or '<id>\t<document>')   ARGV[2] ms from now
-- Returns 1, or 0 when the reservation had already expired (the job may be running elsewhere).
return redis.call('ZADD', KEYS[1], 'XX', 'CH', now_ms() + tonumber(ARGV[2]), ARGV[1])

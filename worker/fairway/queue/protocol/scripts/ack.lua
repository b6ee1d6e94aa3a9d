#!lua flags=allow-oom
-- Acknowledge a finished job (cluster path and shutdown): drop its reservation and attempt counter.
-- KEYS[1] reserved   KEYS[2] attempts   KEYS[3] leased
-- ARGV[1] reservation member (`<job key>\t<tag>`, see lib.lua's lease)
-- Returns 1, or 0 when the lease had already run out (the job may run again elsewhere).
return ack_job(KEYS[1], KEYS[3], KEYS[2], ARGV[1])

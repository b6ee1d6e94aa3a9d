#!lua flags=allow-oom
-- Acknowledge a finished job (cluster path and shutdown): drop its reservation and attempt counter.
-- KEYS[1] reserved   KEYS[2] attempts   KEYS[3] leased
-- ARGV[1] reservation member (`<job key>\t<tag>`, see lib.lua's lease)
-- ARGV[2], ARGV[3] (optional) the job's result entry (JSON) and how long it is kept (ms): lib.lua's
-- keep_result, written whether or not the lease was still held (the job did finish).
-- ARGV[4] (optional) the outcome its batch counts: `cancelled` for a job that stopped when told (with
-- ARGV[2], ARGV[3] empty when it keeps no result); `succeeded` when absent.
-- Returns 1, or 0 when the lease had already run out (the job may run again elsewhere).
keep_result(string.sub(KEYS[1], 1, #KEYS[1] - #QK.reserved), (split_reservation(ARGV[1])), ARGV[2], ARGV[3])
return ack_job(KEYS[1], KEYS[3], KEYS[2], ARGV[1], ARGV[4])

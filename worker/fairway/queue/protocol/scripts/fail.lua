#!lua flags=allow-oom
-- Store a job as failed for good (tries used up, unknown handler, malformed document).
-- KEYS[1] reserved   KEYS[2] attempts   KEYS[3] failed hash   KEYS[4] failed index   KEYS[5] leased
-- ARGV[1] reservation member (`<job key>\t<tag>`)   ARGV[2] job id   ARGV[3] failure record (JSON)
-- ARGV[4] most records kept   ARGV[5], ARGV[6] (optional) the job's result entry and its ttl (ms), as ack.lua
-- Returns 1, or 0 when the lease had already run out (the record is kept all the same; the job's
-- counters then belong to whoever holds it now).
local jk = end_lease(KEYS[1], KEYS[5], ARGV[1])
if jk then forget_counts(KEYS[2], jk, 'failed') end
store_failure(KEYS[3], KEYS[4], ARGV[2], ARGV[3], now_ms(), tonumber(ARGV[4]))
keep_result(string.sub(KEYS[1], 1, #KEYS[1] - #QK.reserved), ARGV[2], ARGV[5], ARGV[6])
return jk and 1 or 0

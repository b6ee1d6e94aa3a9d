#!lua flags=allow-oom
-- Store a tenant job as failed for good, counting the failure for quarantine and the figures.
-- KEYS[1] G .. 'reserved'
-- ARGV[1..6] the tenant group (see read_group)   ARGV[7] reservation member   ARGV[8] job id
-- ARGV[9] failure record (JSON)   ARGV[10] most records kept   ARGV[11] wait bucket (-1 = unknown)
-- ARGV[12], ARGV[13] (optional) the job's result entry and its ttl (ms), as ack.lua
-- Returns 1.
-- #include tenant_ring.lua
-- #include tenant_lib.lua
local group = read_group(ARGV, 1)
local G, member = group.G, ARGV[7]
local id = split_member(member)
local now = now_ms()
local jk = end_lease(G .. GK.reserved, G .. GK.leased, member)
if jk then
  leave_flight(G, id)
  forget_counts(G .. GK.attempts, jk, 'failed')
end
record_failure(group, id, now)
record_figures(G, id, now, 'f', tonumber(ARGV[11]))
store_failure(G .. GK.failed, G .. GK.failed_index, ARGV[8], ARGV[9], now, tonumber(ARGV[10]))
keep_result(G, ARGV[8], ARGV[12], ARGV[13])
return 1

#!lua flags=allow-oom
-- Acknowledge a finished tenant job (cluster path and shutdown), recording its figures.
-- KEYS[1] G .. 'reserved'
-- ARGV[1] G   ARGV[2] reservation member ('<id>\t<job key>\t<tag>')   ARGV[3] wait bucket (-1 = unknown)
-- ARGV[4], ARGV[5] (optional) the job's result entry (JSON) and how long it is kept (ms), as ack.lua
-- ARGV[6] (optional) the outcome its batch counts, as ack.lua's ARGV[4]
-- Returns 1, or 0 when the reservation had already expired.
-- #include tenant_ring.lua
-- #include tenant_lib.lua
keep_result(ARGV[1], string.match(ARGV[2], '^[^\t]*\t(.*)\t[^\t]*$'), ARGV[4], ARGV[5])
return ack_tenant(ARGV[1], ARGV[2], tonumber(ARGV[3]), nil, ARGV[6])

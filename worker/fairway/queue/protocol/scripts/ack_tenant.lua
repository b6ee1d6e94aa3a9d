#!lua flags=allow-oom
-- Acknowledge a finished tenant job (cluster path and shutdown), recording its figures.
-- KEYS[1] G .. 'reserved'
-- ARGV[1] G   ARGV[2] reservation member ('<id>\t<job key>\t<tag>')   ARGV[3] wait bucket (-1 = unknown)
-- Returns 1, or 0 when the reservation had already expired.
-- #include tenant_ring.lua
-- #include tenant_lib.lua
return ack_tenant(ARGV[1], ARGV[2], tonumber(ARGV[3]))

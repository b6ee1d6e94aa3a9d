#!lua flags=allow-oom
-- A tenant job's attempt failed and it has tries left: count the failure (which may quarantine the
-- tenant), then put it back after its backoff or at once. Attempts are kept.
-- KEYS[1] G .. 'reserved'   KEYS[2] the active set (optional: standalone only)
-- ARGV[1..6] the tenant group (see read_group)   ARGV[7] reservation member   ARGV[8] delay ms
-- ARGV[9] wait bucket (-1 = unknown)   ARGV[10] the group's served name
-- ARGV[11] (optional) a hand-back's grace in ms (release.lua): no try spent, no failure counted.
-- Returns 1, 0 when the reservation had expired and the job was already handed out again, or 2 when
-- a hand-back's grace is over (nothing changed: the worker fails the job).
-- #include tenant_ring.lua
-- #include tenant_lib.lua
local group = read_group(ARGV, 1)
local G, member = group.G, ARGV[7]
local grace, now = tonumber(ARGV[11]), now_ms()
if grace and not within_grace(G .. GK.attempts, member, grace, now) then return 2 end
local jk, doc = unlease(G .. GK.reserved, G .. GK.leased, member)
if not jk then return 0 end
local id = split_member(member)
leave_flight(G, id)
if grace then
  count_hand_back(G .. GK.attempts, jk, now)  -- not the tenant's failure: no quarantine, no figures
else
  record_failure(group, id, now)
  record_figures(G, id, now, 'f', tonumber(ARGV[9]))
end
local delay = tonumber(ARGV[8])
mark_ready(G .. GK.attempts, jk, now + delay)  -- its next wait starts when the backoff ends
if delay > 0 then
  redis.call('ZADD', G .. GK.delayed, now + delay, id .. '\t' .. doc)
else
  push_tenant(G, id, doc, now)
  if KEYS[2] then redis.call('SADD', KEYS[2], ARGV[10]) end
end
return 1

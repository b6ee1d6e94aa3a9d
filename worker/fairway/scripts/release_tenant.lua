-- A tenant job's attempt failed and it has tries left: count the failure (which may quarantine the
-- tenant), then put it back after its backoff or at once. Attempts are kept.
-- KEYS[1] G .. 'reserved'   KEYS[2] the active set (optional: standalone only)
-- ARGV[1] G   ARGV[2] member   ARGV[3] delay ms   ARGV[4] window ms   ARGV[5] quarantine failures
-- ARGV[6] wait bucket   ARGV[7] the group's name
-- Returns 1, or 0 when the reservation had expired and the job was already handed out again.
-- #include tenant_lib.lua
local G, member = ARGV[1], ARGV[2]
if redis.call('ZREM', G .. 'reserved', member) == 0 then return 0 end
local id, doc = split_member(member)
local now = now_ms()
leave_flight(G, id)
record_failure(G, id, now, tonumber(ARGV[4]), tonumber(ARGV[5]))
record_figures(G, id, now, 'f', tonumber(ARGV[6]))
local delay = tonumber(ARGV[3])
if delay > 0 then
  redis.call('ZADD', G .. 'delayed', now + delay, member)
else
  push_tenant(G, id, doc, now)
  if KEYS[2] then redis.call('SADD', KEYS[2], ARGV[7]) end
end
return 1

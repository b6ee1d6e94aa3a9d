-- Write the jobs of a schedule's ticks, each tick at most once (docs/schedules.md), in one atomic step.
-- KEYS[1] <family base>schedule:<name>: the schedule's state (names the family's slot), a hash:
--   last (the latest tick handled, epoch s), ran (the latest tick a job was written for), paused ('1')
-- KEYS[2] the active set, KEYS[3] the registry of served names (both optional: standalone Redis only)
-- ARGV[1] the family's base (a queue's `fairway:{Q}:`, a tenant group's G)   ARGV[2] its served name
-- (the queue, or '@<queuePrefix>')   ARGV[3] the tenant id ('' for a queue)   ARGV[4] the tick a new
-- schedule starts after (its state is made then; no job for it)   ARGV[5..] pairs: a tick (epoch s,
-- ascending), its job document
-- A tick no later than `last` was handled by another ticker (or before a restart) and is left out;
-- while paused, ticks are handled without a job. Returns {last, jobs written, paused (0 or 1)}.
-- #include tenant_ring.lua
local state, base, name, tenant = KEYS[1], ARGV[1], ARGV[2], ARGV[3]
local last = tonumber(redis.call('HGET', state, 'last'))
if last == nil then
  last = tonumber(ARGV[4])
  redis.call('HSET', state, 'last', last)
end
local paused = redis.call('HGET', state, 'paused') == '1'
local written, now = 0, now_ms()
for i = 5, #ARGV - 1, 2 do
  local tick = tonumber(ARGV[i])
  if tick > last then
    last = tick
    if not paused then
      if tenant == '' then
        redis.call('RPUSH', base .. QK.ready, ARGV[i + 1])
        redis.call('RPUSH', base .. QK.notify, '1')
      else
        push_tenant(base, tenant, ARGV[i + 1], now)
      end
      written = written + 1
      redis.call('HSET', state, 'ran', tick)
    end
  end
end
redis.call('HSET', state, 'last', last)
if written > 0 then
  if KEYS[2] then redis.call('SADD', KEYS[2], name) end
  if KEYS[3] then redis.call('SADD', KEYS[3], name) end
end
return {last, written, paused and 1 or 0}

#!lua flags=allow-oom
-- Renew a worker's leases (its running and not yet settled jobs), by reservation member: while a
-- worker lives its reservations never run out, whatever its jobs' timeouts; once it dies they run
-- out within a lease.
-- KEYS[1] reserved (a queue's, or a tenant group's)
-- ARGV[1] the lease in ms   ARGV[2..] reservation members (`<job key>\t<tag>`)
-- Returns {the members whose lease had already run out (those jobs may be running elsewhere), the
-- members whose job someone cancelled (cancel.lua's `cancel:<job id>` flag: the worker tells it)}.
local deadline = now_ms() + tonumber(ARGV[1])
local base = string.sub(KEYS[1], 1, #KEYS[1] - #QK.reserved)
local gone, cancelled = {}, {}
for i = 2, #ARGV do
  if redis.call('ZADD', KEYS[1], 'XX', 'CH', deadline, ARGV[i]) == 0
      and not redis.call('ZSCORE', KEYS[1], ARGV[i]) then
    gone[#gone + 1] = ARGV[i]
  elseif redis.call('EXISTS', base .. QK.cancel .. string.match(ARGV[i], '([^\t]*)\t[^\t]*$')) == 1 then
    cancelled[#cancelled + 1] = ARGV[i]
  end
end
return {gone, cancelled}

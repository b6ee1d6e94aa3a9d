#!lua flags=allow-oom
-- Renew a worker's leases (its running and not yet settled jobs), by digest: while a worker lives its
-- reservations never run out, whatever its jobs' timeouts; once it dies they run out within a lease.
-- KEYS[1] reserved   KEYS[2] leased (a queue's, or a tenant group's)
-- ARGV[1] the lease in ms   ARGV[2..] sha1 of each reserved member
-- Returns the digests whose lease had already run out (those jobs may be running elsewhere).
local deadline = now_ms() + tonumber(ARGV[1])
local gone = {}
for i = 2, #ARGV do
  local member = redis.call('HGET', KEYS[2], ARGV[i])
  if member and redis.call('ZSCORE', KEYS[1], member) then
    redis.call('ZADD', KEYS[1], 'XX', deadline, member)
  else
    gone[#gone + 1] = ARGV[i]
  end
end
return gone

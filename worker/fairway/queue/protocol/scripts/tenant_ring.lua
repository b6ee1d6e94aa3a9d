-- Tenant-ring functions every tenant script shares, the producer's enqueue_tenant.lua included (so it
-- carries nothing else of the worker's side; see fairway/queue/protocol/scripts.py).
-- Every key starts with G = '<prefix>:{tenants:<queuePrefix>}:', one hash tag, so one slot; the key
-- parts (GK) are listed in fairway/queue/protocol/keys.py. Tenant ids never contain a tab, so a delayed
-- member '<id>\t<document>' splits unambiguously, and so does a reservation member
-- '<id>\t<job key>\t<tag>' (the job key of a tenant's job is '<tenant id>\t<job id>', see lib.lua).

local function split_member(member)
  local tab = string.find(member, '\t', 1, true)
  return string.sub(member, 1, tab - 1), string.sub(member, tab + 1)
end

-- A tenant with ready jobs joins the ring it belongs in (the slow lane when quarantined).
local function join_ring(G, id)
  if redis.call('SISMEMBER', G .. GK.quarantined, id) == 1 then
    redis.call('RPUSH', G .. GK.qring, id)
  else
    redis.call('RPUSH', G .. GK.ring, id)
  end
end

-- Make a tenant's document ready; a tenant whose list was empty joins its ring, unless it is paused
-- (it joins when it is continued).
local function push_tenant(G, id, doc, now)
  local length = redis.call('RPUSH', G .. GK.t .. id, doc)
  redis.call('RPUSH', G .. GK.notify, '1')
  if length == 1 and redis.call('SISMEMBER', G .. GK.paused_tenants, id) == 0 then join_ring(G, id) end
  redis.call('ZADD', G .. GK.seen, now, id)
end


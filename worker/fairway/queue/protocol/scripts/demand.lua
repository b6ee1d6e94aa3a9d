#!lua flags=no-writes,no-cluster
-- What each served name has waiting and running, for the operator's scaling poll: one call for any
-- number of supervisors sharing a standalone Redis (the cluster path pipelines the same reads).
-- ARGV[1] key prefix   ARGV[2..] served names (a queue, or '@<queuePrefix>' for a tenant group)
-- Returns a flat array, four entries per name: ready, reserved, delayed jobs already due, and when
-- the oldest ready job became ready (ms: when it was handed back ready, lib.lua's mark_ready, else its
-- available_at, else enqueued_at; -1 unknown).
-- A tenant group's ready jobs are its notify tokens (one per ready job; its tenants' lists are not read).
local prefix = ARGV[1]
local now = now_ms()
local out = {}
for i = 2, #ARGV do
  local name = ARGV[i]
  local ready, reserved, delayed, since = nil, nil, nil, -1
  if string.sub(name, 1, 1) == '@' then
    local G = prefix .. ':{tenants:' .. string.sub(name, 2) .. '}:'
    ready, reserved, delayed = redis.call('LLEN', G .. GK.notify), G .. GK.reserved, G .. GK.delayed
  else
    local list = queue_key(prefix, name, QK.ready)
    ready = redis.call('LLEN', list)
    reserved, delayed = queue_key(prefix, name, QK.reserved), queue_key(prefix, name, QK.delayed)
    if ready > 0 then
      local ok, head = pcall(cjson.decode, redis.call('LINDEX', list, 0))
      if ok and type(head) == 'table' then
        local at = head.available_at
        if type(at) ~= 'number' then at = head.enqueued_at end
        if type(head.id) == 'string' then  -- handed back (a retry after its backoff): ready since then
          at = tonumber(redis.call('HGET', queue_key(prefix, name, QK.attempts), head.id .. READY)) or at
        end
        if type(at) == 'number' then since = at end
      end
    end
  end
  out[#out + 1] = ready
  out[#out + 1] = redis.call('ZCARD', reserved)
  out[#out + 1] = redis.call('ZCOUNT', delayed, '-inf', now)
  out[#out + 1] = since
end
return out

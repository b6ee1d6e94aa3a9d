#!lua flags=no-writes,no-cluster
-- What each served name has waiting and running, for the operator's scaling poll: one call for any
-- number of supervisors sharing a standalone Redis (the cluster path pipelines the same reads).
-- ARGV[1] key prefix   ARGV[2..] served names (a queue, or '@<queuePrefix>' for a tenant group)
-- Returns a flat array, four entries per name: ready, reserved, delayed jobs already due, and when
-- the oldest ready job became ready (ms; its available_at, else enqueued_at; -1 unknown).
-- A tenant group's ready jobs are its notify tokens (one per ready job; its tenants' lists are not read).
local prefix = ARGV[1]
local now = now_ms()
local out = {}
for i = 2, #ARGV do
  local name = ARGV[i]
  local ready, since
  local base
  if string.sub(name, 1, 1) == '@' then
    base = prefix .. ':{tenants:' .. string.sub(name, 2) .. '}:'
    ready = redis.call('LLEN', base .. GK.notify)
    since = -1
  else
    base = prefix .. ':{' .. name .. '}:'
    ready = redis.call('LLEN', base .. QK.ready)
    since = -1
    if ready > 0 then
      local ok, head = pcall(cjson.decode, redis.call('LINDEX', base .. QK.ready, 0))
      if ok and type(head) == 'table' then
        local at = head.available_at
        if type(at) ~= 'number' then at = head.enqueued_at end
        if type(at) == 'number' then since = at end
      end
    end
  end
  out[#out + 1] = ready
  out[#out + 1] = redis.call('ZCARD', base .. (string.sub(name, 1, 1) == '@' and GK.reserved or QK.reserved))
  out[#out + 1] = redis.call('ZCOUNT', base .. (string.sub(name, 1, 1) == '@' and GK.delayed or QK.delayed), '-inf', now)
  out[#out + 1] = since
end
return out

#!lua flags=no-writes
-- Read a batch of one tenant group's tenants' figures in Redis: for each tenant, its waiting jobs and
-- its per-minute stats hashes. One call instead of 1 + minutes commands per tenant (at 10,000 tenants
-- the client's own work per command, not Redis, was most of the cost). Read-only.
-- KEYS[1] G .. 'seen' (names the group's slot)
-- ARGV[1] G   ARGV[2] first minute   ARGV[3] last minute   ARGV[4..] tenant ids (at most 500)
-- Returns per tenant, in order: {waiting, {field, value, ...} per minute, first to last}.
local G = ARGV[1]
local first, last = tonumber(ARGV[2]), tonumber(ARGV[3])
local out = {}
for i = 4, #ARGV do
  local id = ARGV[i]
  local row = {redis.call('LLEN', G .. GK.t .. id)}
  for minute = first, last do
    row[#row + 1] = redis.call('HGETALL', G .. GK.stats .. id .. ':' .. minute)
  end
  out[#out + 1] = row
end
return out

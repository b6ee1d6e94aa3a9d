#!lua flags=allow-oom
-- Write tenant settings, then recompute what every pop reads of them (tmeta: whether any exist, the
-- highest weight in effect) and put the tenants they touch that are parked back in their ring, to be
-- judged by the new settings at their next turn.
-- KEYS[1] G .. 'tset'
-- ARGV[1] G   ARGV[2] what:
--   'set'       ARGV[3] tenant id, ARGV[4] the fields to change (`<weight>,<maxInFlight>,<rate>,<burst>`,
--               an empty field left as it is): the tenant's run-time settings
--   'reset'     ARGV[3] tenant id: its run-time settings dropped (the resource's apply again), and its
--               counts of turns skipped at its cap or rate (they described the limits it had)
--   'configure' ARGV[3] the defaults (same form), then pairs tenant id, settings: the resource's
--               defaults and overrides, replacing the ones written before (the operator)
-- Returns 1, or 0 for a 'configure' that found the resource's settings there already (nothing written).
-- #include tenant_ring.lua
-- #include tenant_lib.lua
local G, what = ARGV[1], ARGV[2]
local function fields(raw)
  if not raw then return {'', '', '', ''} end
  local a, b, c, d = string.match(raw, '^([^,]*),([^,]*),([^,]*),([^,]*)$')
  return {a or '', b or '', c or '', d or ''}
end

if what == 'set' then
  local id = ARGV[3]
  local now, change = fields(redis.call('HGET', KEYS[1], id)), fields(ARGV[4])
  for i = 1, 4 do
    if change[i] ~= '' then now[i] = change[i] end
  end
  redis.call('HSET', KEYS[1], id, table.concat(now, ','))
  unpark(G, id)
elseif what == 'reset' then
  redis.call('HDEL', KEYS[1], ARGV[3])
  redis.call('HDEL', G .. GK.bucket, ARGV[3])
  redis.call('HDEL', G .. GK.limited, ARGV[3] .. '\tcapped', ARGV[3] .. '\tthrottled')
  unpark(G, ARGV[3])
elseif what == 'configure' then
  local want = {}
  if ARGV[3] ~= ',,,' then want['*'] = ARGV[3] end
  for i = 4, #ARGV, 2 do want[ARGV[i]] = ARGV[i + 1] end
  local held, same = redis.call('HGETALL', G .. GK.tconf), true
  for i = 1, #held, 2 do
    if want[held[i]] ~= held[i + 1] then same = false end
  end
  local count = 0
  for _ in pairs(want) do count = count + 1 end
  if same and count == #held / 2 then return 0 end  -- what the resource says is there already: no write
  redis.call('DEL', G .. GK.tconf)
  if ARGV[3] ~= ',,,' then redis.call('HSET', G .. GK.tconf, '*', ARGV[3]) end
  for i = 4, #ARGV, 2 do redis.call('HSET', G .. GK.tconf, ARGV[i], ARGV[i + 1]) end
  local parked = redis.call('ZRANGE', G .. GK.parked, 0, -1)
  for i = 1, #parked do unpark(G, parked[i]) end
else
  return redis.error_reply('BAD_ARGS unknown settings operation ' .. tostring(what))
end

local defaults = decode_settings(redis.call('HGET', G .. GK.tconf, '*'))
local wmax = defaults.weight or 1
local weight = {}
local run, conf = redis.call('HGETALL', KEYS[1]), redis.call('HGETALL', G .. GK.tconf)
for i = 1, #run, 2 do weight[run[i]] = decode_settings(run[i + 1]).weight end
for i = 1, #conf, 2 do
  if conf[i] ~= '*' and weight[conf[i]] == nil then weight[conf[i]] = decode_settings(conf[i + 1]).weight end
end
for _, w in pairs(weight) do
  if w > wmax then wmax = w end
end
local any = '0'
if #run + #conf > 0 then any = '1' end
redis.call('HSET', G .. GK.tmeta, 'any', any, 'wmax', wmax)
return 1

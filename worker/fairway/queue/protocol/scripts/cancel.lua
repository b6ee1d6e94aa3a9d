#!lua flags=allow-oom
-- Cancel one job (docs/cancel.md), in one atomic step.
-- KEYS[1] <family base>cancel:<job id> (names the family's slot; the running job's flag)
-- ARGV[1] the family's base (a queue's `fairway:{Q}:`, a tenant group's G)   ARGV[2] job id
-- ARGV[3] job key (the id; `<tenant id>\t<id>` in a tenant group)
-- ARGV[4] the list it waits in (`ready`, or `t:<tenant id>`)   ARGV[5] the prefix of its `delayed`
-- members ('' for a queue, `<tenant id>\t` in a tenant group)   ARGV[6] how long a running job's flag
-- is kept (ms)
-- Returns 'cancelled' (it was waiting or delayed: removed, its unique key released, a kept result says
-- so), 'running' (flagged: its worker tells it at its next lease renewal), 'finished' (a result or a
-- failure record is kept) or 'unknown'. A waiting job is found by scanning its list (and the delayed
-- set) for its id: O(jobs waiting there), run only when someone cancels.
local base, id, jk, member_prefix = ARGV[1], ARGV[2], ARGV[3], ARGV[5]
local list, delayed = base .. ARGV[4], base .. QK.delayed

-- The job is no more: counters and unique key gone (lib.lua), and a result kept when it asked for one.
local function cancelled(doc)
  forget_counts(base .. QK.attempts, jk, 'cancelled')
  local ok, parsed = pcall(cjson.decode, doc)
  if ok and type(parsed) == 'table' and type(parsed.result_ttl) == 'number' and parsed.result_ttl >= 1 then
    keep_result(base, id, cjson.encode({status = 'cancelled', at = now_ms()}), math.floor(parsed.result_ttl * 1000))
  end
  return 'cancelled'
end

if redis.call('EXISTS', base .. QK.result .. id) == 1 or redis.call('HEXISTS', base .. QK.failed, id) == 1 then
  return 'finished'
end
if redis.call('HEXISTS', base .. QK.leased, jk) == 1 then
  redis.call('SET', KEYS[1], '1', 'PX', tonumber(ARGV[6]))
  return 'running'
end
local total = redis.call('LLEN', list)
for start = 0, total - 1, 1000 do
  local docs = redis.call('LRANGE', list, start, start + 999)
  for i = 1, #docs do
    if job_key(docs[i]) == id then
      redis.call('LREM', list, 1, docs[i])
      redis.call('LPOP', base .. QK.notify)  -- one token fewer: one job fewer ready
      return cancelled(docs[i])
    end
  end
end
local count = redis.call('ZCARD', delayed)
for start = 0, count - 1, 1000 do
  local members = redis.call('ZRANGE', delayed, start, start + 999)
  for i = 1, #members do
    local m = members[i]
    if string.sub(m, 1, #member_prefix) == member_prefix then
      local doc = string.sub(m, #member_prefix + 1)
      if job_key(doc) == id then
        redis.call('ZREM', delayed, m)
        return cancelled(doc)
      end
    end
  end
end
return 'unknown'

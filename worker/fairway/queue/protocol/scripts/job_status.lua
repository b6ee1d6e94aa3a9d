#!lua flags=no-writes
-- Where one job is (docs/results.md), read in one atomic step. Read-only.
-- KEYS[1] <family base>result:<job id> (names the family's slot)
-- ARGV[1] the family's base (a queue's `fairway:{Q}:`, a tenant group's G)   ARGV[2] job id
-- ARGV[3] job key (the id; `<tenant id>\t<id>` in a tenant group)
-- ARGV[4] (optional) the list its document waits in (`ready`, or `t:<tenant id>`)
-- ARGV[5] its document, ARGV[6] its member in `delayed` (the document, or `<tenant id>\t<document>`)
-- Returns {'result', entry} when a result is kept; {'running'} while it is leased; {'waiting'} when the
-- document (given) is in its list or delayed; {'failed', record} when a failure record is kept;
-- else {'unknown'}.
local base, id, jk = ARGV[1], ARGV[2], ARGV[3]
local entry = redis.call('LINDEX', KEYS[1], 0)
if entry then return {'result', entry} end
if redis.call('HEXISTS', base .. QK.leased, jk) == 1 then return {'running'} end
if ARGV[5] then
  if redis.call('LPOS', base .. ARGV[4], ARGV[5]) or redis.call('ZSCORE', base .. QK.delayed, ARGV[6]) then
    return {'waiting'}
  end
end
local record = redis.call('HGET', base .. QK.failed, id)
if record then return {'failed', record} end
return {'unknown'}

#!lua flags=allow-oom
-- cancel.lua, complete: generated from fairway/queue/protocol/scripts/ by its scripts.source;
-- do not edit (a test keeps it equal). Call it with EVAL/EVALSHA as docs/protocol.md says.
-- Key parts are the table in fairway/queue/protocol/keys.py, spliced in as literals by the loader.
-- Functions every script shares, spliced in by the loader (fairway/queue/protocol/scripts.py). In the sources,
-- QK.<part> names a queue's key part and GK.<part> a tenant group's; the loader writes the literal.

-- The Redis server's clock in ms: every deadline and due time is on this one clock.
local function now_ms()
  local t = redis.call('TIME')
  return tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
end

-- A queue's key, derived from the prefix (standalone only: the cluster path passes KEYS).
local function queue_key(prefix, queue, part)
  return prefix .. ':{' .. queue .. '}:' .. part
end

-- A reservation is keyed by the job, not by the document's bytes. The job key (`jk`) is the job's id
-- (`<tenant id>\t<job id>` in a tenant group; `#<sha1 of the document>` for a document whose id
-- cannot be read, which the worker then fails as malformed). One reservation per job key: the
-- member `<jk>\t<tag>` in `reserved` (score: its deadline), where the tag names the worker that holds
-- it and the call that took it (`<worker>:<call>.<n>`), and `leased[jk]` = `<tag>\t<document>`. A
-- stale worker (its lease ran out, the job was handed out again) therefore never settles the new
-- holder's reservation: its member, tag included, is gone.
local function job_key(doc)
  -- The clients write `id` first: read it without decoding the document (a third of the script's time).
  local id = string.match(doc, '^{"id":"([%w_%.:%-]+)"')
  if id then return id end
  local ok, parsed = pcall(cjson.decode, doc)
  if ok and type(parsed) == 'table' and type(parsed.id) == 'string' and #parsed.id <= 256
      and not string.find(parsed.id, '\t', 1, true) then
    return parsed.id
  end
  return '#' .. redis.sha1hex(doc)
end

-- A reservation member's job key and tag (the tag is after the last tab).
local function split_reservation(member)
  return string.match(member, '^(.*)\t([^\t]*)$')
end

-- A job's counters are one field of its family's attempts hash, job key -> attempts started
-- + LOST x times it was running when its worker vanished (its reservation expired): one HINCRBY
-- counts an attempt and reads both.
local LOST = 1048576  -- 2^20: attempts never reach it (max_tries is at most 1,000)

-- A job handed back (a retry after its backoff, a job lost with its worker, a retry by hand) became
-- ready again at the time in the same hash's `<jk>\tready` field (ms, Redis clock): its next wait
-- runs from there, not from the enqueue, so a tenant's wait never counts its own backoff.
local READY = '\tready'

local function mark_ready(attempts, jk, at)
  redis.call('HSET', attempts, jk .. READY, at)
end

-- A job whose handler the worker that took it does not know (a rollout: an old pod took a job for a
-- new handler) is handed back, no try spent, for a grace period that runs from the first hand-back,
-- kept in the same hash's `<jk>\thanded` field (ms, Redis clock).
local HANDED = '\thanded'

-- A unique job (producer_lib.lua's claim_unique) names its lock in the same hash's `<jk>\tunique`
-- field; the lock (a string in the family's slot) holds the job's id while the job waits or runs.
local UNIQUE = '\tunique'
local BATCH = '\tbatch'

-- A sealed batch none of whose jobs is pending is done (docs/batches.md): its callbacks are made due
-- now in the family's `delayed` set (moved to ready by the next maintenance, within a second, with a
-- wake-up), `on_complete` always and `on_success` when no job failed or was cancelled; exactly once,
-- since only the call that sets `done_at` gets here; the batch's hash then lives `ttl_ms` more.
local function finish_batch(base, key)
  local b = redis.call('HMGET', key, 'sealed', 'done_at', 'failed', 'cancelled', 'on_complete', 'on_success',
    'ttl_ms', 'member_prefix', 'then', 'next')
  if b[1] ~= '1' or b[2] then return end
  local now = now_ms()
  redis.call('HSET', key, 'done_at', now)
  local all_succeeded = tonumber(b[3] or '0') + tonumber(b[4] or '0') == 0
  local due = {}
  if b[5] then due[#due + 1] = b[5] end
  if b[6] and all_succeeded then due[#due + 1] = b[6] end
  -- A chain's next step (its batch `next`, made with the chain): its jobs join that batch and are due now;
  -- a step that did not all succeed stops the chain there.
  if b[9] and all_succeeded then
    for _, doc in ipairs(cjson.decode(b[9])) do
      redis.call('HSET', base .. 'attempts', (b[8] or '') .. cjson.decode(doc).id .. BATCH, b[10])
      due[#due + 1] = doc
    end
  elseif b[9] then
    redis.call('HSET', key, 'stopped', '1')
  end
  for i = 1, #due do redis.call('ZADD', base .. 'delayed', now, (b[8] or '') .. due[i]) end
  if #due > 0 then
    if (b[8] or '') == '' then
      if redis.call('LLEN', base .. 'notify') <= redis.call('LLEN', base .. 'ready') then
        redis.call('RPUSH', base .. 'notify', '1')
      end
    elseif redis.call('LLEN', base .. 'wake') == 0 then
      redis.call('RPUSH', base .. 'wake', '1')
    end
  end
  redis.call('PEXPIRE', key, tonumber(b[7]))
end

-- A batch's job ended for good (`outcome`: succeeded, failed or cancelled): counted in its batch.
local function count_in_batch(base, bid, outcome)
  local key = base .. 'batch:' .. bid
  if redis.call('EXISTS', key) == 0 then return end  -- (an open batch left unsealed expired)
  redis.call('HINCRBY', key, outcome, 1)
  if redis.call('HINCRBY', key, 'pending', -1) <= 0 then finish_batch(base, key) end
end

-- Forget a job's counters (it is done, or failed for good: `outcome` succeeded, failed or cancelled),
-- release its unique key when the job still holds it (it may have run out and been claimed by a newer
-- job), and count it in its batch.
local function forget_counts(attempts, jk, outcome)
  local held = redis.call('HMGET', attempts, jk .. UNIQUE, jk .. BATCH)
  local lock, batch = held[1], held[2]
  if lock then
    if redis.call('GET', lock) == string.match(jk, '([^\t]*)$') then redis.call('DEL', lock) end
  end
  if batch then count_in_batch(string.sub(attempts, 1, #attempts - #'attempts'), batch, outcome) end
  if lock or batch then
    redis.call('HDEL', attempts, jk, jk .. READY, jk .. HANDED, jk .. UNIQUE, jk .. BATCH)
  else
    redis.call('HDEL', attempts, jk, jk .. READY, jk .. HANDED)
  end
end

-- May the job of reservation `member` be handed back once more (grace_ms after its first hand-back)?
-- false: its grace is over, and the worker fails it instead.
local function within_grace(attempts, member, grace_ms, now)
  local first = redis.call('HGET', attempts, (split_reservation(member)) .. HANDED)
  return not first or now - tonumber(first) < grace_ms
end

-- A hand-back is no attempt: the count the reservation took is given back, its first time kept.
local function count_hand_back(attempts, jk, now)
  redis.call('HINCRBY', attempts, jk, -1)
  redis.call('HSETNX', attempts, jk .. HANDED, now)
end

-- Count one more attempt of a job being reserved; {attempts started, times lost, when it became
-- ready again (false: never handed back, its document says)}.
local function count_attempt(attempts, jk)
  local both = redis.call('HINCRBY', attempts, jk, 1)
  return {both % LOST, math.floor(both / LOST), redis.call('HGET', attempts, jk .. READY)}
end

-- A reservation expired: its worker vanished mid-job. The attempt is given back (losing a worker
-- is not the job's failure) and counted as lost instead, so a job that kills every worker that
-- runs it can still be stopped (the worker fails it past its lost limit). It is ready again `now`.
local function count_lost(attempts, jk, now)
  redis.call('HINCRBY', attempts, jk, LOST - 1)
  mark_ready(attempts, jk, now)
end

-- Lease job `jk` (document `doc`) to the worker call `tag` until `deadline`: the worker holding it
-- renews it by its member (renew.lua) while it lives; a worker that dies stops renewing and its jobs
-- come back when the lease runs out (seconds), not after the job's whole timeout.
-- Returns the member, or false when the job is leased already: a copy of a job that is running
-- (a producer sent its document, or one with the same id, twice) is that job, and is dropped.
local function lease(reserved, leased, jk, tag, doc, deadline)
  if redis.call('HSETNX', leased, jk, tag .. '\t' .. doc) == 0 then return false end
  local member = jk .. '\t' .. tag
  redis.call('ZADD', reserved, deadline, member)
  return member
end

-- The document a lease holds (`leased` keeps `<tag>\t<document>`), or false when there is none.
local function held_document(held)
  return held and string.sub(held, string.find(held, '\t', 1, true) + 1)
end

-- End a lease; the job key, or false when the lease had already run out (the job may be running
-- elsewhere, under another member).
local function end_lease(reserved, leased, member)
  if redis.call('ZREM', reserved, member) == 0 then return false end
  local jk = split_reservation(member)
  redis.call('HDEL', leased, jk)
  return jk
end

-- End a lease and keep its document (a release puts it back): the job key and the document, or
-- false as end_lease.
local function unlease(reserved, leased, member)
  local held = redis.call('HGET', leased, (split_reservation(member)))
  local jk = end_lease(reserved, leased, member)
  if not jk then return false end
  return jk, held_document(held) or ''
end

-- An expired lease: out of `reserved` and `leased`, the attempt counted as lost; the job key and
-- its document (false when the lease index had lost it: nothing to put back).
local function expire(reserved, leased, attempts, member, now)
  redis.call('ZREM', reserved, member)
  local jk = split_reservation(member)
  local held = redis.call('HGET', leased, jk)
  redis.call('HDEL', leased, jk)
  count_lost(attempts, jk, now)
  return jk, held_document(held)
end

-- Acknowledge a plain job: end its lease and drop its counters (`outcome`: cancelled for a job that
-- stopped when told; succeeded otherwise). 1, or 0 when the lease had already run out (the job may be
-- running again elsewhere).
local function ack_job(reserved, leased, attempts, member, outcome)
  local jk = end_lease(reserved, leased, member)
  if not jk then return 0 end
  forget_counts(attempts, jk, outcome or 'succeeded')
  return 1
end

-- Keep a settled job's result (docs/results.md) when its worker sends one: the entry (JSON) alone in
-- the list `<family base>result:<job id>`, which readers wait on with `BLMOVE key key` (a blocking read
-- that leaves it there), for `ttl_ms`. Written again by a later run of the same job, never twice.
local function keep_result(base, job_id, entry, ttl_ms)
  if not entry or entry == '' then return end
  local key = base .. 'result:' .. job_id
  redis.call('DEL', key)
  redis.call('RPUSH', key, entry)
  redis.call('PEXPIRE', key, tonumber(ttl_ms))
end

-- Keep a failure record under the job's id and trim the store to its newest `kept` records.
local function store_failure(failed, index, id, record, now, kept)
  redis.call('HSET', failed, id, record)
  redis.call('ZADD', index, now, id)
  local excess = redis.call('ZCARD', index) - kept
  if excess > 0 then
    local oldest = redis.call('ZRANGE', index, 0, excess - 1)
    redis.call('ZREMRANGEBYRANK', index, 0, excess - 1)
    redis.call('HDEL', failed, unpack(oldest))
  end
end

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
local list, delayed = base .. ARGV[4], base .. 'delayed'

-- The job is no more: counters and unique key gone (lib.lua), and a result kept when it asked for one.
local function cancelled(doc)
  forget_counts(base .. 'attempts', jk, 'cancelled')
  local ok, parsed = pcall(cjson.decode, doc)
  if ok and type(parsed) == 'table' and type(parsed.result_ttl) == 'number' and parsed.result_ttl >= 1 then
    keep_result(base, id, cjson.encode({status = 'cancelled', at = now_ms()}), math.floor(parsed.result_ttl * 1000))
  end
  return 'cancelled'
end

if redis.call('EXISTS', base .. 'result:' .. id) == 1 or redis.call('HEXISTS', base .. 'failed', id) == 1 then
  return 'finished'
end
if redis.call('HEXISTS', base .. 'leased', jk) == 1 then
  redis.call('SET', KEYS[1], '1', 'PX', tonumber(ARGV[6]))
  return 'running'
end
local total = redis.call('LLEN', list)
for start = 0, total - 1, 1000 do
  local docs = redis.call('LRANGE', list, start, start + 999)
  for i = 1, #docs do
    if job_key(docs[i]) == id then
      redis.call('LREM', list, 1, docs[i])
      redis.call('LPOP', base .. 'notify')  -- one token fewer: one job fewer ready
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

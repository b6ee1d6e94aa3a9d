-- enqueue_tenant.lua, complete: generated from fairway/queue/protocol/scripts/ by its scripts.source;
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

-- Enqueue tenant jobs, one or many for the same tenant (the documented script; docs/protocol.md).
-- KEYS[1] G .. 'ring' (names the group's slot)
-- KEYS[2] the active set, KEYS[3] the registry of served names (both optional: standalone Redis only)
-- ARGV[1] G, the group's key prefix ('<prefix>:{tenants:<queuePrefix>}:')   ARGV[2] tenant id
-- ARGV[3] delay: whole ms as digits (0 = now)   ARGV[4] the group's served name, '@<queuePrefix>'
-- ARGV[5..] job documents (1 to 1000), each with "tenant": ARGV[2] and
-- "queue": <queuePrefix> .. ARGV[2]
-- Delayed documents go to the group's delayed set (the tenant joins the ring when they are due; the
-- group is named in the registry at once, in the active set only then); when they are the earliest
-- there, one token goes on the group's wake list (unless one waits there), to wake an idle worker.
-- Returns how many documents were enqueued; when a unique document (`unique_key`) found its key held
-- by another job (and was not written), an array instead, one entry per document: 1 (enqueued) or
-- the id of the job holding its key. Refuses (writing nothing) with BAD_KEYS, BAD_DELAY,
-- BAD_TENANT, NO_DOCUMENTS, TOO_MANY, or for a document (naming its position) TOO_LARGE,
-- BAD_DOCUMENT, BAD_ID, BAD_HANDLER, MISMATCH or BAD_UNIQUE.
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
  if redis.call('SISMEMBER', G .. 'quarantined', id) == 1 then
    redis.call('RPUSH', G .. 'qring', id)
  else
    redis.call('RPUSH', G .. 'ring', id)
  end
end

-- Make a tenant's document ready; a tenant whose list was empty joins its ring, unless it is paused
-- (it joins when it is continued).
local function push_tenant(G, id, doc, now)
  local length = redis.call('RPUSH', G .. 't:' .. id, doc)
  redis.call('RPUSH', G .. 'notify', '1')
  if length == 1 and redis.call('SISMEMBER', G .. 'paused_tenants', id) == 0 then join_ring(G, id) end
  redis.call('ZADD', G .. 'seen', now, id)
end


-- The checks the producer scripts make before writing anything, so a refused call writes nothing. Each
-- returns nil when the input is good, else the error reply's text: a code (the first word, listed in
-- docs/protocol.md, "Refusals"), then what was wrong and how to fix it. LIMIT.<name> is a limit from
-- fairway/queue/protocol/job.py, spliced in as a literal by the loader.

-- A unique job's fields (docs/unique.md): `unique_key`, text of 1 to 200 bytes
-- without control characters, and `unique_for`, seconds (1 ms at least), which needs the key.
local function unique_refusal(parsed)
  local key, for_s = parsed.unique_key, parsed.unique_for
  if for_s == cjson.null then for_s = nil end
  if key == nil or key == cjson.null then
    if for_s == nil then return nil end
    return 'BAD_UNIQUE unique_for needs unique_key in the document: producers write the key they derive ' ..
      '(docs/protocol.md, "Unique jobs")'
  end
  if type(key) ~= 'string' or #key < 1 or #key > 200 or string.find(key, '%c') then
    return 'BAD_UNIQUE unique_key must be 1-' .. 200 ..
      ' bytes of text without control characters (e.g. "invoice:42")'
  end
  if for_s ~= nil and (type(for_s) ~= 'number' or not (for_s * 1000 >= 1) or for_s * 1000 > 31622400000) then
    return 'BAD_UNIQUE unique_for must be seconds from 0.001 to ' .. (31622400000 / 1000) ..
      ', or absent to hold the key until the job settles'
  end
end

-- The document: its size, then its shape, then that its id, handler, queue and tenant fields are
-- sound and are those of this call (`tenant` nil for a plain queue's job). Returns the refusal, or
-- nil and the parsed document.
local function document_refusal(doc, queue, tenant)
  if #doc > 524288 then
    return 'TOO_LARGE document is ' .. #doc .. ' bytes, over the ' .. 524288 ..
      '-byte limit: split the work into smaller jobs at dispatch (one per chunk of rows)'
  end
  local ok, parsed = pcall(cjson.decode, doc)
  if not ok or type(parsed) ~= 'table' or type(parsed.id) ~= 'string' or type(parsed.handler) ~= 'string'
      or type(parsed.queue) ~= 'string' then
    return 'BAD_DOCUMENT the document must be a JSON object with string fields id, handler and queue ' ..
      '(docs/protocol.md)'
  end
  if #parsed.id > 256 or not string.find(parsed.id, '^[%w_%.:%-]+$') then
    return 'BAD_ID job id ' .. string.format('%q', string.sub(parsed.id, 1, 80)) .. ' is invalid: use 1-' ..
      256 .. " letters, digits, '_', '.', ':' or '-'"
  end
  if #parsed.handler > 200 or not string.find(parsed.handler, '^[%a_][%w_%.:]*$') then
    return 'BAD_HANDLER handler ' .. string.format('%q', string.sub(parsed.handler, 1, 80)) ..
      ' is not a handler name: start with a letter or _, then letters, digits, _ . : (at most ' ..
      200 .. ')'
  end
  local doc_tenant = parsed.tenant
  if doc_tenant == cjson.null then doc_tenant = nil end
  if parsed.queue ~= queue or doc_tenant ~= tenant then
    if tenant == nil then
      return 'MISMATCH the document says queue ' .. string.format('%q', parsed.queue) ..
        (doc_tenant ~= nil and ' and has a tenant' or '') .. ' but is enqueued to queue ' ..
        string.format('%q', queue) .. ': set "queue" to it (tenant jobs go through enqueue_tenant)'
    end
    return 'MISMATCH the document says queue ' .. string.format('%q', parsed.queue) .. ' and tenant ' ..
      (doc_tenant ~= nil and string.format('%q', tostring(doc_tenant)) or 'none') .. ' but is enqueued for tenant ' .. string.format('%q', tenant) ..
      ': set "tenant" to it and "queue" to ' .. string.format('%q', queue)
  end
  return unique_refusal(parsed), parsed
end

-- Claim a unique job's key (`lock`, in the family's slot) for job `id`, whose job key is `jk`: true, or
-- the id of the job that holds it (waiting, delayed or running), and then nothing is written. The
-- attempts hash's `<jk>\tunique` names the lock, so settling the job releases it (lib.lua's
-- forget_counts); `unique_for` bounds it as well.
local function claim_unique(lock, parsed, jk, attempts)
  local holder = redis.call('GET', lock)
  if holder then return holder end
  local for_s = parsed.unique_for
  if type(for_s) == 'number' then
    redis.call('SET', lock, parsed.id, 'PX', math.floor(for_s * 1000))
  else
    redis.call('SET', lock, parsed.id)
  end
  redis.call('HSET', attempts, jk .. UNIQUE, lock)
  return true
end

-- Schedule `members` in a delayed set at `due`; when that makes them the earliest there, wake one
-- idle worker: it blocks until the earliest delayed job it knows of, and must hear of an earlier one.
-- The token goes on `wake` unless one waits there already (at most one: `wake_limit` tokens more
-- than `ready_list` holds jobs, for a queue whose notify list is also its wake list).
local function schedule(delayed, due, members, wake, ready_list)
  local first = redis.call('ZRANGE', delayed, 0, 0, 'WITHSCORES')
  for i = 1, #members do redis.call('ZADD', delayed, due, members[i]) end
  if first[2] ~= nil and due >= tonumber(first[2]) then return end
  local held = ready_list and redis.call('LLEN', ready_list) or 0
  if redis.call('LLEN', wake) <= held then redis.call('RPUSH', wake, '1') end
end

-- A delay: whole ms written as digits only (no sign, exponent, fraction or hex), from 0 to
-- 31622400000; returns the number, or nil and the refusal.
local function read_delay(raw)
  raw = raw or ''
  local delay = string.find(raw, '^%d+$') and #raw <= 12 and tonumber(raw) or nil
  if delay == nil or delay > 31622400000 then
    return nil, 'BAD_DELAY delay ' .. string.format('%q', string.sub(raw, 1, 40)) ..
      ' must be whole milliseconds written as digits, from 0 to ' .. 31622400000
  end
  return delay
end

local function queue_refusal(name)
  if #name > 63 or not string.find(name, '^[%w][%w_%.:%-]*$') then
    return 'BAD_QUEUE queue name ' .. string.format('%q', name) ..
      ' is invalid: start with a letter or digit, then letters, digits, _ . : - (at most 63 characters)'
  end
end

local function tenant_refusal(id)
  if #id > 64 or not string.find(id, '^[%w][%w_%.%-]*$') then
    return 'BAD_TENANT tenant id ' .. string.format('%q', id) .. ' is invalid: use 1-' ..
      64 .. " letters, digits, '_', '.' or '-', starting with a letter or digit" ..
      ' (no braces, colons, spaces or wildcards)'
  end
end

local G, id = ARGV[1] or '', ARGV[2] or ''
local queue_prefix = string.match(G, '{tenants:([^{}]*)}:$')
if KEYS[1] ~= G .. 'ring' or queue_prefix == nil or ARGV[4] ~= '@' .. queue_prefix then
  return redis.error_reply('BAD_KEYS KEYS[1] must be ARGV[1] .. ' .. string.format('%q', 'ring') ..
    ', ARGV[1] end in {tenants:<queuePrefix>}: and ARGV[4] be @<queuePrefix> (docs/protocol.md)')
end
local delay, refusal = read_delay(ARGV[3])
refusal = refusal or tenant_refusal(id)
if refusal then return redis.error_reply(refusal) end
local count = #ARGV - 4
if count < 1 then
  return redis.error_reply('NO_DOCUMENTS the call has no documents; send 1 to ' .. 1000)
end
if count > 1000 then
  return redis.error_reply('TOO_MANY ' .. count .. ' documents in one call; send at most ' ..
    1000 .. ' per call')
end
local uniques = {}  -- position -> parsed document, for unique documents only
for i = 5, #ARGV do
  local parsed
  refusal, parsed = document_refusal(ARGV[i], queue_prefix .. id, id)
  if refusal then return redis.error_reply(refusal .. ' (document ' .. (i - 4) .. ')') end
  if type(parsed.unique_key) == 'string' then uniques[i] = parsed end
end
-- Unique documents claim their keys (`unique:<tenant id>:<key>`): one whose key is held is left out.
local written, replies, duplicates = {}, {}, false
for i = 5, #ARGV do
  local holder = true
  if uniques[i] then
    local parsed = uniques[i]
    holder = claim_unique(G .. 'unique:' .. id .. ':' .. parsed.unique_key, parsed, id .. '\t' .. parsed.id,
      G .. 'attempts')
  end
  if holder == true then
    written[#written + 1] = ARGV[i]
    replies[i - 4] = 1
  else
    replies[i - 4] = holder
    duplicates = true
  end
end
local now = now_ms()
if delay > 0 then
  local members = {}
  for i = 1, #written do members[i] = id .. '\t' .. written[i] end
  if #members > 0 then schedule(G .. 'delayed', now + delay, members, G .. 'wake', nil) end
else
  for i = 1, #written do push_tenant(G, id, written[i], now) end
end
if #written > 0 then
  if KEYS[3] then redis.call('SADD', KEYS[3], ARGV[4]) end
  if delay <= 0 and KEYS[2] then redis.call('SADD', KEYS[2], ARGV[4]) end
end
if duplicates then return replies end
return count

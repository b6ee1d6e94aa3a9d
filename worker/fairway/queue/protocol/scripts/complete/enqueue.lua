-- enqueue.lua, complete: generated from fairway/queue/protocol/scripts/ by its scripts.source;
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

-- A job's counters are one field of its family's attempts hash, sha1(member) (its digest) -> attempts started
-- + LOST x times it was running when its worker vanished (its reservation expired): one HINCRBY
-- counts an attempt and reads both.
local LOST = 1048576  -- 2^20: attempts never reach it (max_tries is at most 1,000)

-- Forget a job's counters (it is done, or failed for good).
local function forget_counts(attempts, digest)
  redis.call('HDEL', attempts, digest)
end

-- Count one more attempt of a job being reserved; {attempts started, times lost}.
local function count_attempt(attempts, digest)
  local both = redis.call('HINCRBY', attempts, digest, 1)
  return {both % LOST, math.floor(both / LOST)}
end

-- A reservation expired: its worker vanished mid-job. The attempt is given back (losing a worker
-- is not the job's failure) and counted as lost instead, so a job that kills every worker that
-- runs it can still be stopped (the worker fails it past its lost limit).
local function count_lost(attempts, digest)
  redis.call('HINCRBY', attempts, digest, LOST - 1)
end

-- A reservation is a lease: the member in `reserved` with its deadline, and in `leased` under the same
-- digest as its counters, so the worker holding it renews it by digest (renew.lua) while it lives,
-- without sending documents. A worker that dies stops renewing, and its jobs come back when the
-- lease runs out (seconds), not after the job's whole timeout.
-- False when a copy with the same bytes is leased already (a producer sent one document twice): the
-- caller drops this copy, which is the same job, instead of letting two copies share one lease.
-- Returns the member's digest (sha1, computed once per job), or false for such a copy.
local function lease(reserved, leased, member, deadline)
  if redis.call('ZADD', reserved, 'NX', deadline, member) == 0 then return false end
  local digest = redis.sha1hex(member)
  redis.call('HSET', leased, digest, member)
  return digest
end

-- End a lease; its digest, or false when it had already run out (the job may be running elsewhere).
local function unlease(reserved, leased, member)
  if redis.call('ZREM', reserved, member) == 0 then return false end
  local digest = redis.sha1hex(member)
  redis.call('HDEL', leased, digest)
  return digest
end

-- Acknowledge a plain job: end its lease and drop its counters. 1, or 0 when the lease had already
-- run out (the job may be running again elsewhere).
local function ack_job(reserved, leased, attempts, doc)
  local digest = unlease(reserved, leased, doc)
  if not digest then return 0 end
  forget_counts(attempts, digest)
  return 1
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

-- Enqueue one job document (the documented script any language may call). One atomic step: if it
-- returns an error, nothing was written.
-- KEYS[1] ready   KEYS[2] notify   KEYS[3] delayed
-- KEYS[4] active set, KEYS[5] queue registry (both optional: standalone Redis only)
-- ARGV[1] job document   ARGV[2] delay: whole ms as digits (0 = ready now)   ARGV[3] queue name
-- Returns 1 when the job is ready now, 0 when it was scheduled; refuses (writing nothing) with
-- BAD_DELAY, BAD_QUEUE, TOO_LARGE, BAD_DOCUMENT, BAD_ID, BAD_HANDLER or MISMATCH.
-- The checks the producer scripts make before writing anything, so a refused call writes nothing. Each
-- returns nil when the input is good, else the error reply's text: a code (the first word, listed in
-- docs/protocol.md, "Refusals"), then what was wrong and how to fix it. LIMIT.<name> is a limit from
-- fairway/queue/protocol/job.py, spliced in as a literal by the loader.

-- The document: its size, then its shape, then that its id, handler, queue and tenant fields are
-- sound and are those of this call (`tenant` nil for a plain queue's job).
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

local delay, refusal = read_delay(ARGV[2])
refusal = refusal or queue_refusal(ARGV[3]) or document_refusal(ARGV[1], ARGV[3], nil)
if refusal then return redis.error_reply(refusal) end
if KEYS[5] then redis.call('SADD', KEYS[5], ARGV[3]) end
if delay > 0 then
  redis.call('ZADD', KEYS[3], now_ms() + delay, ARGV[1])
  return 0
end
redis.call('RPUSH', KEYS[1], ARGV[1])
redis.call('RPUSH', KEYS[2], '1')
if KEYS[4] then redis.call('SADD', KEYS[4], ARGV[3]) end
return 1

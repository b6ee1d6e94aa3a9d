-- The checks the producer scripts make before writing anything, so a refused call writes nothing. Each
-- returns nil when the input is good, else the error reply's text: a code (the first word, listed in
-- docs/protocol.md, "Refusals"), then what was wrong and how to fix it. LIMIT.<name> is a limit from
-- fairway/queue/protocol/job.py, spliced in as a literal by the loader.

-- A unique job's fields (docs/unique.md): `unique_key`, text of 1 to LIMIT.unique_key_bytes bytes
-- without control characters, and `unique_for`, seconds (1 ms at least), which needs the key.
local function unique_refusal(parsed)
  local key, for_s = parsed.unique_key, parsed.unique_for
  if for_s == cjson.null then for_s = nil end
  if key == nil or key == cjson.null then
    if for_s == nil then return nil end
    return 'BAD_UNIQUE unique_for needs unique_key in the document: producers write the key they derive ' ..
      '(docs/protocol.md, "Unique jobs")'
  end
  if type(key) ~= 'string' or #key < 1 or #key > LIMIT.unique_key_bytes or string.find(key, '%c') then
    return 'BAD_UNIQUE unique_key must be 1-' .. LIMIT.unique_key_bytes ..
      ' bytes of text without control characters (e.g. "invoice:42")'
  end
  if for_s ~= nil and (type(for_s) ~= 'number' or not (for_s * 1000 >= 1) or for_s * 1000 > LIMIT.unique_for_ms) then
    return 'BAD_UNIQUE unique_for must be seconds from 0.001 to ' .. (LIMIT.unique_for_ms / 1000) ..
      ', or absent to hold the key until the job settles'
  end
end

-- The document: its size, then its shape, then that its id, handler, queue and tenant fields are
-- sound and are those of this call (`tenant` nil for a plain queue's job). Returns the refusal, or
-- nil and the parsed document.
local function document_refusal(doc, queue, tenant)
  if #doc > LIMIT.document_bytes then
    return 'TOO_LARGE document is ' .. #doc .. ' bytes, over the ' .. LIMIT.document_bytes ..
      '-byte limit: split the work into smaller jobs at dispatch (one per chunk of rows)'
  end
  local ok, parsed = pcall(cjson.decode, doc)
  if not ok or type(parsed) ~= 'table' or type(parsed.id) ~= 'string' or type(parsed.handler) ~= 'string'
      or type(parsed.queue) ~= 'string' then
    return 'BAD_DOCUMENT the document must be a JSON object with string fields id, handler and queue ' ..
      '(docs/protocol.md)'
  end
  if #parsed.id > LIMIT.id_length or not string.find(parsed.id, '^[%w_%.:%-]+$') then
    return 'BAD_ID job id ' .. string.format('%q', string.sub(parsed.id, 1, 80)) .. ' is invalid: use 1-' ..
      LIMIT.id_length .. " letters, digits, '_', '.', ':' or '-'"
  end
  if #parsed.handler > LIMIT.handler_length or not string.find(parsed.handler, '^[%a_][%w_%.:]*$') then
    return 'BAD_HANDLER handler ' .. string.format('%q', string.sub(parsed.handler, 1, 80)) ..
      ' is not a handler name: start with a letter or _, then letters, digits, _ . : (at most ' ..
      LIMIT.handler_length .. ')'
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
-- LIMIT.delay_ms; returns the number, or nil and the refusal.
local function read_delay(raw)
  raw = raw or ''
  local delay = string.find(raw, '^%d+$') and #raw <= 12 and tonumber(raw) or nil
  if delay == nil or delay > LIMIT.delay_ms then
    return nil, 'BAD_DELAY delay ' .. string.format('%q', string.sub(raw, 1, 40)) ..
      ' must be whole milliseconds written as digits, from 0 to ' .. LIMIT.delay_ms
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
  if #id > LIMIT.tenant_id_length or not string.find(id, '^[%w][%w_%.%-]*$') then
    return 'BAD_TENANT tenant id ' .. string.format('%q', id) .. ' is invalid: use 1-' ..
      LIMIT.tenant_id_length .. " letters, digits, '_', '.' or '-', starting with a letter or digit" ..
      ' (no braces, colons, spaces or wildcards)'
  end
end

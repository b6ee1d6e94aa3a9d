-- The checks the producer scripts make before writing anything, so a refused call writes nothing. Each
-- returns nil when the input is good, else the error reply's text: a code (the first word, listed in
-- docs/protocol.md), then what was wrong and how to fix it. LIMIT.<name> is a limit from
-- fairway/queue/job.py, spliced in as a literal by the loader.

local function document_refusal(doc)
  if #doc > LIMIT.document_bytes then
    return 'TOO_LARGE document is ' .. #doc .. ' bytes, over the ' .. LIMIT.document_bytes ..
      '-byte limit: split the work into smaller jobs at dispatch (one per chunk of rows)'
  end
  local ok, parsed = pcall(cjson.decode, doc)
  if not ok or type(parsed) ~= 'table' or type(parsed.id) ~= 'string' or type(parsed.handler) ~= 'string' then
    return 'BAD_DOCUMENT the document must be a JSON object with string fields id and handler (docs/protocol.md)'
  end
end

-- A delay in whole ms from 0 to LIMIT.delay_ms; returns the number, or nil and the refusal.
local function read_delay(raw)
  local delay = tonumber(raw)
  if delay == nil or delay ~= delay or delay < 0 or delay > LIMIT.delay_ms or math.floor(delay) ~= delay then
    return nil, 'BAD_DELAY delay ' .. tostring(raw) .. ' must be whole milliseconds from 0 to ' .. LIMIT.delay_ms
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

-- lib/attempts.lua: A job's attempts and log (docs/data-model.md, "Attempts and logs").
--#include lib/chunked.lua

-- Most attempts kept per job: the first ATT_FIRST and the last ATT_LAST (the ones between go).
local ATT_FIRST, ATT_LAST = 3, 20

-- Adds attempt records: `recs` is a list of { id, record }, a record a table with n (the attempt),
-- s (start ms, when known), e (end ms), w (worker id, when known), o (outcome: failed, lost,
-- completed; running: recorded by a lease renewal while it runs), err (error text), tb (the
-- handler's trace). A record of the same attempt as the job's last one replaces it, keeping what
-- the new one does not know (a lost attempt's start and worker, from its running record). Marks
-- the queue (cfg `attempts`) so forget deletes them.
local function add_attempts(K, recs)
  if #recs == 0 then return end
  local ids = {}
  for i, r in ipairs(recs) do ids[i] = r[1] end
  local old = K.no_attempts and {} or hmget(K.attempts, ids)
  local args = {}
  for i, r in ipairs(recs) do
    local list = {}
    if old[i] then
      local ok, l = pcall(cjson.decode, old[i])
      if ok and type(l) == 'table' then list = l end
    end
    local n = #list
    if n > 0 and type(list[n]) == 'table' and list[n].n == r[2].n then
      for k, v in pairs(list[n]) do
        if r[2][k] == nil then r[2][k] = v end
      end
      list[n] = r[2]
    else
      list[n + 1] = r[2]
    end
    if #list > ATT_FIRST + ATT_LAST then table.remove(list, ATT_FIRST + 1) end
    args[#args + 1] = r[1]
    args[#args + 1] = cjson.encode(list)
  end
  chunked('HSET', K.attempts, args)
  if K.no_attempts then
    redis.call('HSET', K.cfg, 'attempts', '1')
    K.no_attempts = nil
  end
end

-- The optional tail of a fail or ack: "<start ms>~<worker id>" -> start (number or nil), worker
-- (string or nil), whether a renewal recorded the attempt as under way (an ack's tail then
-- starts with "!"), and the start as given (a string: written back as it came, since turning a
-- Lua number into text goes through a float format, ~1,200 instructions).
local function run_of(tail)
  if not tail or tail == '' then return nil, nil, false end
  local rec, s, w = string.match(tail, '^(!?)(%d*)~(.*)$')
  if not s then return nil, nil, false end
  return tonumber(s), (w ~= '' and w or nil), rec == '!', s
end

-- Deletes jobs' attempts and logs (with the rest of their data, see forget).
local function forget_attempts(K, ids)
  if not K.no_attempts then chunked('HDEL', K.attempts, ids) end
  if not K.no_logs then
    local have = hmget(K.logs, ids)
    for i, id in ipairs(ids) do
      if have[i] then redis.call('DEL', K.lg .. id) end
    end
    chunked('HDEL', K.logs, ids)
  end
end

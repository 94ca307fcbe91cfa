-- lib/events.lua: The event log (docs/data-model.md, "Events").
--#include lib/base.lua

-- The event log's most entries, or false when the queue logs no events (read once per call; see
-- "Events").
local function events_max(K)
  if K.evmax == nil then
    K.evmax = K.events and tonumber(redis.call('HGET', K.cfg, 'events')) or false
  end
  return K.evmax
end

-- An event's data over EVENT_DATA_MAX bytes is left out of the log, and an entry holds events
-- until their ids and data reach EVENT_ENTRY_BYTES (at least one event): the log's size is
-- bounded by its most entries times about 17 KiB, whatever the jobs return (see "Events").
local EVENT_DATA_MAX = 1024

local EVENT_ENTRY_BYTES = 16384

-- Logs an event of `kind` for jobs `ids` (`data[i]`: job i's data; nil: none), one stream entry
-- per 500 jobs or EVENT_ENTRY_BYTES (see "Events"). `stored`: the data of these events is kept in
-- the results hash, so a reader can be given data left out of the log.
local function emit(K, kind, ids, data, now, stored)
  local max = events_max(K)
  if not max or #ids == 0 then return end
  now = now or now_ms()
  local i = 1
  while i <= #ids do
    local args, bytes, left = { 't', now, 'e', kind }, 0, {}
    local j = i
    while j <= #ids and j < i + 500 do
      local d = data and data[j] or ''
      local size = #ids[j] + math.min(#d, EVENT_DATA_MAX + 1)
      if j > i and bytes + size > EVENT_ENTRY_BYTES then break end
      bytes = bytes + size
      args[#args + 1] = ids[j]
      if #d > EVENT_DATA_MAX then
        left[#left + 1] = (j - i + 1) .. ':' .. #d .. (stored and 'r' or '')
        d = ''
      end
      args[#args + 1] = d
      j = j + 1
    end
    i = j
    if #left > 0 then
      -- Data left out: a last pair with an empty id lists "<pair>:<size>[r]" (r: in `results`).
      args[#args + 1] = ''
      args[#args + 1] = table.concat(left, ' ')
    end
    local n = redis.call('HINCRBY', K.stats, 'events', 1)
    local r = redis.pcall('XADD', K.events, 'MAXLEN', '~', max, n .. '-1', unpack(args)) -- bounded: 1006
    if type(r) == 'table' and r.err then
      -- The counter fell behind the log (reset by hand): catch up with the log's last entry.
      local info = redis.call('XINFO', 'STREAM', K.events)
      for k = 1, #info, 2 do
        if info[k] == 'last-generated-id' then
          n = tonumber(string.match(info[k + 1], '^(%d+)')) + 1
        end
      end
      redis.call('HSET', K.stats, 'events', n)
      redis.call('XADD', K.events, 'MAXLEN', '~', max, n .. '-1', unpack(args)) -- bounded: 1006
    end
  end
end

#!lua flags=no-writes
--[[ Read a page of a queue's schedules, for `schedules()` (docs/data-model.md, "Schedules").
  Writes nothing. (The due ones: due_schedules.lua.) A page ends at about ARGV[1] schedules or
  256 KB of stored specs, whichever comes first, so a call's cost does not grow with the number
  of schedules or the size of their payloads.
  KEYS[1] sched hash (name -> "<version>|<spec>")   KEYS[2] snext zset (name -> next slot ms)
  KEYS[3] spause hash (paused name -> its next slot kept)   KEYS[4] slast hash (name -> last job id)
  KEYS[5] meta hash   KEYS[6] delayed zset   KEYS[7] active zset (the last job's state)
  ARGV[1] about how many schedules to return
  ARGV[2] the HSCAN cursor to go on from ("0" to start)
  Returns: { Redis now ms, the earliest next slot (-1: none), the next cursor ("0": no more), then
  per schedule its name, its next slot ("" when it has none; a paused one's kept slot), its stored
  "<version>|<spec>", "1" when paused (else ""), the id of the last job it enqueued ("": none) and that job's state
  (delayed, ready, active, completed, dead; "gone" when no longer kept; "" when none) }. ]]
--#include lib/meta.lua

-- The state of job `id` ("gone" when the queue no longer keeps it).
local function state_of(id)
  local m = redis.call('HGET', KEYS[5], id)
  local s = m and parse_meta(m)
  if not s then return 'gone' end
  if s == 'c' then return 'completed' end
  if s == 'x' then return 'dead' end
  if redis.call('ZSCORE', KEYS[6], id) then return 'delayed' end
  if redis.call('ZSCORE', KEYS[7], id) then return 'active' end
  return 'ready'
end

local t = redis.call('TIME')
local now = t[1] * 1000 + math.floor(t[2] / 1000)
local limit = tonumber(ARGV[1])
local first = redis.call('ZRANGE', KEYS[2], 0, 0, 'WITHSCORES')
local out = { now, first[2] and tonumber(first[2]) or -1, '0' }
local cursor, n, bytes = ARGV[2], 0, 0
repeat
  local page = redis.call('HSCAN', KEYS[1], cursor, 'COUNT', 20)
  cursor = page[1]
  local all = page[2]
  for i = 1, #all, 2 do
    local name = all[i]
    local kept = redis.call('HGET', KEYS[3], name)
    out[#out + 1] = name
    if kept then
      out[#out + 1] = kept ~= '0' and kept or ''
    else
      out[#out + 1] = redis.call('ZSCORE', KEYS[2], name) or ''
    end
    out[#out + 1] = all[i + 1]
    out[#out + 1] = kept and '1' or ''
    local last = redis.call('HGET', KEYS[4], name)
    out[#out + 1] = last or ''
    out[#out + 1] = last and state_of(last) or ''
    n = n + 1
    bytes = bytes + #all[i + 1]
  end
until cursor == '0' or n >= limit or bytes >= 262144
out[3] = cursor
return out

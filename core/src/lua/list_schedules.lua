#!lua flags=no-writes
--[[ Read a page of a queue's schedules, for `schedules()` (docs/data-model.md, "Schedules").
  Writes nothing. (The due ones: due_schedules.lua.) A page ends at about ARGV[1] schedules or
  256 KB of stored specs, whichever comes first, so a call's cost does not grow with the number
  of schedules or the size of their payloads.
  KEYS[1] sched hash (name -> "<version>|<spec>")   KEYS[2] snext zset (name -> next slot ms)
  ARGV[1] about how many schedules to return
  ARGV[2] the HSCAN cursor to go on from ("0" to start)
  Returns: { Redis now ms, the earliest next slot (-1: none), the next cursor ("0": no more), then
  per schedule its name, its next slot ("" when it has none) and its stored "<version>|<spec>" }. ]]
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
    out[#out + 1] = all[i]
    out[#out + 1] = redis.call('ZSCORE', KEYS[2], all[i]) or ''
    out[#out + 1] = all[i + 1]
    n = n + 1
    bytes = bytes + #all[i + 1]
  end
until cursor == '0' or n >= limit or bytes >= 262144
out[3] = cursor
return out

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
  if #all > 0 then
    -- One call per key for the page's names (not one per name): a page of 200 schedules with
    -- their last jobs stays a few ms. A page is an HSCAN step: about 20 names (a small hash's
    -- whole listpack, at most hash-max-listpack-entries).
    local names = {}
    for i = 1, #all, 2 do names[#names + 1] = all[i] end
    local nexts = redis.call('ZMSCORE', KEYS[2], unpack(names)) -- bounded: one HSCAN page
    local kept = redis.call('HMGET', KEYS[3], unpack(names)) -- bounded: one HSCAN page
    local last = redis.call('HMGET', KEYS[4], unpack(names)) -- bounded: one HSCAN page
    local ids = {}
    for j = 1, #names do
      if last[j] then ids[#ids + 1] = last[j] end
    end
    local state = {}
    if #ids > 0 then
      local metas = redis.call('HMGET', KEYS[5], unpack(ids)) -- bounded: one HSCAN page
      local pending = {}
      for j, id in ipairs(ids) do
        local s = metas[j] and parse_meta(metas[j])
        if not s then state[id] = 'gone'
        elseif s == 'c' then state[id] = 'completed'
        elseif s == 'x' then state[id] = 'dead'
        else pending[#pending + 1] = id end
      end
      if #pending > 0 then
        local delayed = redis.call('ZMSCORE', KEYS[6], unpack(pending)) -- bounded: one HSCAN page
        local active = redis.call('ZMSCORE', KEYS[7], unpack(pending)) -- bounded: one HSCAN page
        for j, id in ipairs(pending) do
          state[id] = delayed[j] and 'delayed' or (active[j] and 'active' or 'ready')
        end
      end
    end
    for j, name in ipairs(names) do
      local spec = all[2 * j]
      out[#out + 1] = name
      if kept[j] then
        out[#out + 1] = kept[j] ~= '0' and kept[j] or ''
      else
        out[#out + 1] = nexts[j] or ''
      end
      out[#out + 1] = spec
      out[#out + 1] = kept[j] and '1' or ''
      out[#out + 1] = last[j] or ''
      out[#out + 1] = last[j] and state[last[j]] or ''
      n = n + 1
      bytes = bytes + #spec
    end
  end
until cursor == '0' or n >= limit or bytes >= 262144
out[3] = cursor
return out

-- lib/bury.lua: Dead-lettering jobs.
--#include lib/chunked.lua
--#include lib/dedup.lua
--#include lib/events.lua
--#include lib/meta.lua
--#include lib/retention.lua
--#include lib/waiters.lua
--#include lib/parents.lua

-- The error texts of `dead` (see `bury`).
local function e_of(dead)
  local out = {}
  for i, d in ipairs(dead) do out[i] = d[3] end
  return out
end

-- Dead-letters jobs: `dead` is a list of { id, meta, error text }; counted as failed, with a
-- "dead" event (`kind` "expired": counted and reported as expired instead, see "Expiry").
local function bury(K, now, P, dead, kind)
  if #dead == 0 then return end
  -- Jobs buried by a later call score after every job already there, even within one
  -- millisecond (by 1/1024 ms, exact in a double at these times), so the dead set's order is the
  -- order they died in and its bound trims the oldest.
  local at, top = now, redis.call('ZRANGE', K.dead, -1, -1, 'WITHSCORES')[2]
  if top and tonumber(top) >= tonumber(now) then
    at = string.format('%.17g', tonumber(top) + 1 / 1024)
  end
  local z, m, e, ids = {}, {}, {}, {}
  for _, d in ipairs(dead) do
    z[#z + 1] = at
    z[#z + 1] = d[1]
    m[#m + 1] = d[1]
    m[#m + 1] = d[2]
    e[#e + 1] = d[1]
    e[#e + 1] = d[3]
    ids[#ids + 1] = d[1]
  end
  chunked('ZADD', K.dead, z)
  chunked('HSET', K.meta, m)
  chunked('HSET', K.errors, e)
  redis.call('HINCRBY', K.stats, kind == 'expired' and 'expired' or 'failed', #dead)
  idem_finished(K, now, P, ids)
  release_dedup(K, ids, true)
  drop_expiry(K, ids)
  emit(K, kind or 'dead', ids, e_of(dead), now)
  if not K.no_flows then
    local outs, k = {}, kind == 'expired' and 'e' or 'x'
    for i, d in ipairs(dead) do outs[i] = k .. d[3] end
    tell_parents(K, ids, outs)
  end
  if not K.no_waiters and redis.call('EXISTS', K.waiters) == 1 then
    local done = {}
    for i, d in ipairs(dead) do
      local _, _, _, enq = parse_meta(d[2])
      done[i] = { d[1], enq or '0', 'x' .. d[3] }
    end
    notify_waiters(K, done)
  end
  trim_dead(K, now, P)
end

-- The dead record of a job whose meta `m` does not parse: its text goes into the error.
local function unreadable(id, m)
  return { id, 'x|0|1|0|0', 'unreadable job record (meta ' .. string.format('%q', m) ..
    '); dead-lettered so the rest of its batch could go on' }
end

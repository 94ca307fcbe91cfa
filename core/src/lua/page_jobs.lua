#!lua flags=no-writes
--[[ One page of the ids of the jobs in one state, after a cursor: a stable place in the state's
  own order, so a walk page by page while workers run never lists a job twice and never skips
  one that stayed in the state for the whole walk (list_jobs.lua pages by offset, which moving
  jobs shift). Writes nothing (works on a Redis at maxmemory); `get_jobs.lua` then reads the jobs.
  The orders and places:
    delayed  by due time, then id: the place is "<due>|<id>" of the last job listed
    dead     by time of death, then id: "<died>|<id>"
    active   by lease deadline, then id: "<deadline>|<id>". Deadlines move with every renewal, so
             this is not the order of a walk: the caller reads the whole zset this way, a page of
             it per call, and keeps the ids it lists next (by id; see `Queue::jobs_page`).
             A renewal moves a deadline later, so a job is not passed over by this read (but
             one a manual extend gave less time than its lease had left).
    completed  newest first (the done list from its end): "<index>|<id>"
    ready    the plain ready list from its front, then each priority's list (lowest first), both
             as fetches take them: "r|<index>|<id>", "p|<priority>|<index>|<id>" (index: where
             the job was in its list when listed); then the grouped ready jobs in
             no particular order: an HSCAN of `route` (the jobs with a group or a priority,
             delayed and running ones too), keeping those waiting in their group's zset:
             "g|<HSCAN cursor of the batch>|<place in the batch>|<id of the last entry looked
             at>".
  A list place whose job is no longer ready (fetched, cancelled) goes on from the list's front:
  the list is taken from the front, so every job before it was taken too. Grouped ready jobs
  follow HSCAN's guarantee: a job there for the whole walk is listed; Redis may list one twice
  only if the hash shrinks during the walk (after most of its jobs finished).
  Cost per call: delayed, dead and active O(log n + page); completed and the ready lists O(page +
  how far the list moved since the last page: jobs taken or trimmed); grouped ready jobs at most
  ARGV[4] `route` entries looked at, however many of them are delayed or running (a page may then
  hold fewer than asked, even none: the walk ends when no place is returned, not on a short page).
  KEYS[1] ready list   KEYS[2] delayed zset   KEYS[3] active zset   KEYS[4] dead zset
  KEYS[5] done list    KEYS[6] prio zset      KEYS[7] p (priority list key prefix)
  KEYS[8] route hash   KEYS[9] g (group key prefix)   KEYS[10] meta hash
  KEYS[11] gset set    KEYS[12] gheld set
  ARGV[1] state: "delayed", "ready", "active", "dead" or "completed"
  ARGV[2] the place ("" the start)   ARGV[3] most ids to return (> 0)
  ARGV[4] most jobs to look at for grouped ready ones: the ids listed (the lists' too) and the
    `route` entries passed over (a page may end short of ARGV[3] for it)
  Returns: { ids, the place after them or false when the state holds no more, how many jobs were
  looked at (the ids and the `route` entries passed over) }. ]]
--#include lib/active.lua
--#include lib/chunked.lua
--#include lib/route.lua
--#K
local state, place, want = ARGV[1], ARGV[2], tonumber(ARGV[3])
local budget = tonumber(ARGV[4]) or want
local ids = {}

-- Whether `a` sorts before `b` byte by byte, as a zset orders members of one score. (Lua's `<`
-- follows the server's locale: strcoll, many times slower than this on ids that differ early.)
local function bytes_before(a, b)
  if a == b then return false end
  for i = 1, math.min(#a, #b) do
    local x, y = string.byte(a, i), string.byte(b, i)
    if x ~= y then return x < y end
  end
  return #a < #b
end

-- The zset `key` in (score, member) order after the place "<score>|<member>" (the active zset's
-- ANCHOR, scored +inf after every job, ends it).
local function zset_after(key)
  local start = 0
  if place ~= '' then
    local score, member = string.match(place, '^([^|]*)|(.*)$')
    if not score then return redis.error_reply('tideq: bad cursor') end
    if redis.call('ZSCORE', key, member) == score then
      start = redis.call('ZRANK', key, member) + 1
    else
      -- The member left: the first rank after it, by a binary search among its score's ties.
      local lo = redis.call('ZCOUNT', key, '-inf', '(' .. score)
      local hi = redis.call('ZCOUNT', key, '-inf', score)
      while lo < hi do
        local mid = math.floor((lo + hi) / 2)
        local m = redis.call('ZRANGE', key, mid, mid)[1]
        if m and not bytes_before(member, m) then lo = mid + 1 else hi = mid end
      end
      start = lo
    end
  end
  local got = redis.call('ZRANGE', key, start, start + want - 1)
  -- The anchor scores +inf: only the last id read may be it, and nothing follows it.
  if got[#got] == ANCHOR then
    got[#got] = nil
    return { got, false, #got }
  end
  if #got < want then return { got, false, #got } end
  return { got, redis.call('ZSCORE', key, got[#got]) .. '|' .. got[#got], #got }
end

-- Whether job `id` is waiting in a ready list (not fetched, delayed, finished or gone).
local function waiting(id)
  local m = redis.call('HGET', K.meta, id)
  return m and string.sub(m, 1, 1) == 'q' and not redis.call('ZSCORE', K.active, id)
    and not redis.call('ZSCORE', K.delayed, id)
end

-- Where job `id` is in list `key` now, given its index `hint` when it was listed: lists are taken
-- from the front, so it has only moved towards it (or back a little, when jobs were put back at
-- the front). Looks backwards from the hint in growing windows, so the cost follows how far the
-- list moved since, not its length; false when it is not there. `front_pushed`: jobs may be put
-- back at the list's front (the ready lists, not the done list).
local function find(key, id, hint, front_pushed)
  local hi, span = hint + 16, 64
  while true do
    local lo = math.max(0, hi - span)
    local got = redis.call('LRANGE', key, lo, hi)
    for j = #got, 1, -1 do
      if got[j] == id then return lo + j - 1 end
    end
    if lo == 0 then break end
    hi, span = lo, span * 2
  end
  -- Many jobs put back at the front meanwhile (a worker's shutdown): look from the front.
  return front_pushed and redis.call('LPOS', key, id) or false
end

-- Appends the ready list `key`'s ids after the place `after` ("<index>|<id>", "" its front) to
-- the page; the place after the page's last id, or false when the list has no more.
local function list_after(key, after)
  local from = 0
  local hint, id = string.match(after, '^(%d+)|(.*)$')
  -- A job no longer waiting was taken, and with it every job before it: go on from the front.
  -- A cancelled one (its data gone) may still be there, its entry left for the fetches to drop
  -- (a ghost): go on after it, or the walk would start again from the front for ever.
  if hint and (waiting(id) or redis.call('HEXISTS', K.meta, id) == 0) then
    local at = find(key, id, tonumber(hint), true)
    if at then from = at + 1 end
  end
  local got = redis.call('LRANGE', key, from, from + want - #ids - 1)
  for _, got_id in ipairs(got) do ids[#ids + 1] = got_id end
  if #got == 0 then return false end
  return (from + #got - 1) .. '|' .. got[#got]
end

if state == 'delayed' then
  return zset_after(K.delayed)
elseif state == 'dead' then
  return zset_after(K.dead)
elseif state == 'active' then
  return zset_after(K.active)
elseif state == 'completed' then
  -- Newest first: from the done list's end towards its front.
  local from = redis.call('LLEN', K.done) - 1
  if place ~= '' then
    local hint, id = string.match(place, '^(%d+)|(.*)$')
    if not hint then return redis.error_reply('tideq: bad cursor') end
    local at = find(K.done, id, tonumber(hint), false)
    -- Gone: trimmed from the front, with every job older than it.
    if not at then return { ids, false, 0 } end
    from = at - 1
  end
  if from < 0 then return { ids, false, 0 } end
  local lo = math.max(0, from - want + 1)
  local got = redis.call('LRANGE', K.done, lo, from)
  for i = #got, 1, -1 do ids[#ids + 1] = got[i] end
  if lo == 0 then return { ids, false, #ids } end
  return { ids, lo .. '|' .. ids[#ids], #ids }
elseif state ~= 'ready' then
  return redis.error_reply('tideq: unknown job state ' .. tostring(state))
end

-- Ready: the plain list, the priorities' lists, then the grouped jobs.
local seg, rest = string.match(place, '^(%a)|(.*)$')
if place == '' then seg, rest = 'r', '' end
if not seg then return redis.error_reply('tideq: bad cursor') end
if seg == 'r' then
  local at = list_after(K.ready, rest)
  if #ids >= want then return { ids, 'r|' .. at, #ids } end
  seg, rest = 'p', ''
end
if seg == 'p' then
  local lvl, after = string.match(rest, '^([^|]*)|(.*)$')
  local levels
  if lvl then
    local at = list_after(K.p .. lvl, after)
    if #ids >= want then return { ids, 'p|' .. lvl .. '|' .. at, #ids } end
    levels = redis.call('ZRANGE', K.prio, '(' .. lvl, '+inf', 'BYSCORE')
  else
    levels = redis.call('ZRANGE', K.prio, 0, -1)
  end
  for _, l in ipairs(levels) do
    local at = list_after(K.p .. l, '')
    if #ids >= want then return { ids, 'p|' .. l .. '|' .. at, #ids } end
  end
  seg, rest = 'g', '0|'
end
if seg ~= 'g' then return redis.error_reply('tideq: bad cursor') end
local cursor, at, after = string.match(rest, '^(%d+)|(%d*)|?(.*)$')
if not cursor then return redis.error_reply('tideq: bad cursor') end
-- A group with ready jobs is in the rotation or held: with neither, no grouped job is ready.
if redis.call('SCARD', K.gset) == 0 and redis.call('SCARD', K.gheld) == 0 then
  return { ids, false, #ids }
end
-- Jobs looked at: those listed so far, and each `route` entry passed over.
local looked = #ids
-- Per group: whether it is in the rotation or held, the only groups with ready jobs (asked once
-- per group in this call, two calls a batch: the entries of delayed or running jobs of other
-- groups cost no call each).
local listed = {}
while true do
  -- The page is full, or the look's budget spent: go on from here.
  if #ids >= want or looked >= budget then
    if after ~= '' then return { ids, 'g|' .. cursor .. '|' .. at .. '|' .. after, looked } end
    return { ids, 'g|' .. cursor .. '||', looked }
  end
  local r = redis.call('HSCAN', K.route, cursor, 'COUNT', 100)
  local f = r[2]
  local n = #f / 2
  -- Where in this batch the last page stopped: HSCAN gives an unchanged batch in the same order.
  -- The entry at `at` (1-based) was the last looked at; if it moved, find it; if it left, the
  -- one after it now stands at `at`.
  local from = 1
  if after ~= '' then
    local i = tonumber(at) or 1
    if f[2 * i - 1] == after then
      from = i + 1
    else
      from = i
      for j = 1, #f, 2 do
        if f[j] == after then from = (j + 1) / 2 + 1 break end
      end
    end
  end
  local group_at, ask = {}, {}
  for i = from, n do
    local _, g = parse_route(f[2 * i])
    if g and g ~= '' then
      group_at[i] = g
      if listed[g] == nil then
        listed[g] = false
        ask[#ask + 1] = g
      end
    end
  end
  local in_rotation = chunked_read('SMISMEMBER', K.gset, ask)
  local in_held = chunked_read('SMISMEMBER', K.gheld, ask)
  for j, g in ipairs(ask) do listed[g] = in_rotation[j] == 1 or in_held[j] == 1 end
  for i = from, n do
    if #ids >= want or looked >= budget then
      -- Go on after the entry before this one (looked at last).
      if i > 1 then
        return { ids, 'g|' .. cursor .. '|' .. (i - 1) .. '|' .. f[2 * i - 3], looked }
      end
      return { ids, 'g|' .. cursor .. '||', looked }
    end
    -- A grouped job waiting in its group's zset (not running, not delayed).
    local g = group_at[i]
    if g and listed[g] and redis.call('ZSCORE', K.g .. g, f[2 * i - 1]) then
      ids[#ids + 1] = f[2 * i - 1]
    end
    looked = looked + 1
  end
  cursor, after = r[1], ''
  if cursor == '0' then return { ids, false, looked } end
end

-- lib/control.lua: Queue control: priorities, groups, limits, rates, the rotation (docs/data-model.md, "Queue control").
--#include lib/base.lua
--#include lib/chunked.lua
--#include lib/latency.lua
--#include lib/route.lua

-- n fresh sequence numbers: returns the one before the first.
local function seq_block(K, n)
  return redis.call('HINCRBY', K.stats, 'seq', n) - n
end

-- Whether any group limit, rate or pause is set (a queue default, or any group's own): without
-- one, every group may always start its next job, and none of it is looked up.
local function groups_limited(K, C)
  if C.limited == nil then
    C.limited = C.glimit ~= nil or C.grate ~= nil or redis.call('EXISTS', K.gcfg) == 1
  end
  return C.limited
end

-- "n|ms" -> n, ms (nil when unset); "n|ms|b<burst>", a token bucket -> n, ms, burst.
local function parse_rate(r)
  if not r then return nil end
  local n, ms, b = string.match(r, '^(%d+)|(%d+)|b(%d+)$')
  if not n then n, ms = string.match(r, '^(%d+)|(%d+)$') end
  return tonumber(n), tonumber(ms), tonumber(b)
end

-- A token bucket refilled with n tokens per ms, holding at most `burst`, kept as the time its
-- tokens are all back ("tat", ms; absent or past: full). With `used` tokens taken by this call
-- already: how many more it may take now, and when none, the ms until one is back.
local function bucket_room(tat, n, ms, burst, used, now)
  local per = ms / n
  local t = math.max(tonumber(tat or 0) or 0, now) + used * per
  local room = math.floor((now + burst * per - t) / per + 1e-9)
  if room >= 1 then return room end
  return 0, math.max(1, math.ceil(t + per - burst * per - now))
end

-- The bucket's "tat" after `k` more tokens were taken (a string, exact to the µs).
local function bucket_take(tat, n, ms, k, now)
  return string.format('%.17g', math.max(tonumber(tat or 0) or 0, now) + k * ms / n)
end

-- The key of group g's token bucket (`gb:<group>`, beside its rate window `gr:<group>`).
local function group_bucket_key(K, g)
  return string.sub(K.gr, 1, -4) .. 'gb:' .. g
end

-- When a rate-limited log `key` (n starts per ms) allows the next start: 0 = now.
local function rate_wait(key, n, ms, now)
  redis.call('ZREMRANGEBYSCORE', key, '-inf', now - ms)
  if redis.call('ZCARD', key) < n then return 0 end
  local oldest = redis.call('ZRANGE', key, 0, 0, 'WITHSCORES')
  return math.max(1, tonumber(oldest[2]) + ms - now + 1)
end

-- Group g's settings in force (its own, else the queue's defaults), read once per call; `limiter`:
-- the shared limiter its starts take from (the caller takes from it after the fetch).
local function group_cfg(K, C, g)
  local c = C.gc[g]
  if not c then
    local v = redis.call('HMGET', K.gcfg, 'limit:' .. g, 'rate:' .. g, 'paused:' .. g,
      'until:' .. g, 'limiter:' .. g, 'back:' .. g)
    c = { limit = tonumber(v[1]) or C.glimit, rate = v[2] or C.grate, paused = v[3] ~= false,
      until_ms = tonumber(v[4]), limiter = v[5] or nil, back_ms = tonumber(v[6]) }
    C.gc[g] = c
  end
  return c
end

-- Whether any grouped job is running (its group's count is kept in gstate; none when no job
-- has a route).
local function groups_running(K)
  if K.has and K.has.route == false then return false end
  return redis.call('EXISTS', K.gstate) == 1
end

-- Jobs of group g running now (kept up to date in C.act within one call).
local function group_active(K, C, g)
  local a = C.act[g]
  if not a then
    a = tonumber(redis.call('HGET', K.gstate, g) or '0')
    C.act[g] = a
  end
  return a
end

-- Adds deltas (group -> n) to the groups' running counts (gstate), two calls for all.
local function add_group_active(K, C, deltas, groups)
  if #groups == 0 then return end
  local cur = hmget(K.gstate, groups)
  local set, del = {}, {}
  for i, g in ipairs(groups) do
    local v = (tonumber(cur[i]) or 0) + deltas[g]
    C.act[g] = math.max(v, 0)
    if v > 0 then
      set[#set + 1] = g
      set[#set + 1] = v
    else
      del[#del + 1] = g
    end
  end
  chunked('HSET', K.gstate, set)
  chunked('HDEL', K.gstate, del)
end

-- How many more jobs group g may start now (math.huge: no limit); when none, also the ms until
-- its rate allows one, if the rate is what stops it, and 'back' when a give-back's mark is.
local function group_room(K, C, g, now)
  if not groups_limited(K, C) then return math.huge end
  local c = group_cfg(K, C, g)
  if c.paused then return 0 end
  if c.until_ms then
    -- Backing off (snooze_job.lua): it waits like a rate-limited group, then the field goes.
    if c.until_ms > now then return 0, c.until_ms - now end
    redis.call('HDEL', K.gcfg, 'until:' .. g)
    c.until_ms = nil
  end
  if c.back_ms then
    -- Given back for want of room in its shared limiter (release_job.lua): passed over until
    -- then, unless one of its jobs ends first (groups_done clears the mark).
    if c.back_ms > now then return 0, c.back_ms - now, 'back' end
    redis.call('HDEL', K.gcfg, 'back:' .. g)
    c.back_ms = nil
  end
  local room = math.huge
  if c.limit then
    room = c.limit - group_active(K, C, g)
    if room <= 0 then return 0 end
  end
  local n, ms, burst = parse_rate(c.rate)
  if burst then
    if c.tat == nil then c.tat = redis.call('GET', group_bucket_key(K, g)) end
    local r, wait = bucket_room(c.tat, n, ms, burst, C.rs[g] or 0, now)
    if r == 0 then return 0, wait end
    room = math.min(room, r)
  elseif n then
    -- Starts of this call are not in the log yet.
    local used = C.rs[g] or 0
    if used >= n then return 0, ms + 1 end
    local wait = rate_wait(K.gr .. g, n - used, ms, now)
    if wait > 0 then return 0, wait end
    room = math.min(room, n - used - redis.call('ZCARD', K.gr .. g))
  end
  return room
end

-- A group with no room to start a job leaves the rotation until it has some again: held (a job
-- of it ending, a resume or a settings change offers it again), or waiting for its rate window.
local function group_hold(K, g, now, wait)
  redis.call('SREM', K.gset, g)
  redis.call('SADD', K.gheld, g)
  if wait then redis.call('ZADD', K.gwait, now + wait, g) end
end

-- Puts groups at the back of the rotation, those not in it already.
local function rotation_join(K, groups)
  local inside = chunked_read('SMISMEMBER', K.gset, groups)
  local new = {}
  for i, g in ipairs(groups) do
    if inside[i] == 0 then new[#new + 1] = g end
  end
  if #new == 0 then return false end
  chunked('SADD', K.gset, new)
  chunked('RPUSH', K.grot, new)
  return true
end

-- Offers groups that may have ready jobs a place in the rotation (at its back; a group already
-- in it keeps its place). Without group limits this is three calls for all of them. `ready`: the
-- groups are known to have ready jobs. Returns whether any joined.
local function groups_offer(K, C, groups, now, ready)
  local can = {}
  for _, g in ipairs(groups) do
    if ready or redis.call('EXISTS', K.g .. g) == 1 then
      if groups_limited(K, C) then
        local room, wait, why = group_room(K, C, g, now)
        if room > 0 then
          can[#can + 1] = g
          redis.call('SREM', K.gheld, g)
        elseif why == 'back' then
          -- Marked by a give-back: it is in the rotation (held when the fetch meets it) or
          -- held already, and stays where it is (never both).
        else
          redis.call('SADD', K.gheld, g)
          if wait then redis.call('ZADD', K.gwait, now + wait, g) end
        end
      else
        can[#can + 1] = g
      end
    elseif groups_limited(K, C) then
      redis.call('SREM', K.gheld, g)
      -- An emptied group keeps no mark of a give-back either.
      if C.gback then redis.call('HDEL', K.gcfg, 'back:' .. g) end
    end
  end
  return #can > 0 and rotation_join(K, can)
end

-- Jobs of groups ended (completed, failed, released, expired): `groups` lists each group once,
-- `ended[g]` how many of its jobs. Their running counts go down; with group limits, their slots
-- are free again and each group is offered its place back (idle workers woken when one joins).
local function groups_done(K, C, groups, ended, now)
  if #groups == 0 then return end
  local deltas = {}
  for _, g in ipairs(groups) do deltas[g] = -ended[g] end
  add_group_active(K, C, deltas, groups)
  if not groups_limited(K, C) then return end
  if C.gback then
    -- A group given back waits for a slot of its limiter: one of its jobs ending may free one.
    local marks = {}
    for _, g in ipairs(groups) do
      marks[#marks + 1] = 'back:' .. g
      local c = C.gc[g]
      if c then c.back_ms = nil end
    end
    chunked('HDEL', K.gcfg, marks)
  end
  -- Only a held group waits for a slot: a group with ready jobs is in the rotation or held,
  -- and one in the rotation keeps its place.
  local held = chunked_read('SMISMEMBER', K.gheld, groups)
  local offer = {}
  for i, g in ipairs(groups) do
    if held[i] == 1 then offer[#offer + 1] = g end
  end
  if #offer > 0 and groups_offer(K, C, offer, now, false) then wake(K.wake) end
end

local function group_done(K, C, g, now)
  groups_done(K, C, { g }, { [g] = 1 }, now)
end

-- Makes jobs ready, each in its queue: the ready list, its priority's list, or its group's zset.
-- A job of a group keeps the place its enqueue gave it (its sequence number), so a retried,
-- recovered or released job runs before the group's jobs enqueued after it. Other jobs queue at
-- the back of their list, or at the front when `front` (a release at shutdown). A script with the
-- rat key records when they became ready: since[i] (a delayed job's due time; `since` for all when it
-- is one time), else `now`.
local function make_ready(K, C, ids, front, now, since)
  if #ids == 0 then return end
  mark_ready_since(K, ids, since, now)
  local r = routes(K, ids)
  if not r then
    if front then
      for i = #ids, 1, -1 do redis.call('LPUSH', K.ready, ids[i]) end
    else
      chunked('RPUSH', K.ready, ids)
    end
    return
  end
  local plain, prio = {}, {}
  -- Per group (in order of first appearance), its jobs' scores and ids.
  local groups, byg = {}, {}
  local ngrouped = 0
  for i, id in ipairs(ids) do
    local p, g, seq = nil, nil, nil
    if r[i] then p, g, seq = parse_route(r[i]) end
    if not p then
      plain[#plain + 1] = id
    else
      if g == '' then
        prio[#prio + 1] = p
        prio[#prio + 1] = id
      else
        local score = tonumber(p) * TWO32 + tonumber(seq) % TWO32
        local z = byg[g]
        if not z then
          z = {}
          byg[g] = z
          groups[#groups + 1] = g
        end
        z[#z + 1] = score
        z[#z + 1] = id
        ngrouped = ngrouped + 1
      end
    end
  end
  if front then
    for i = #plain, 1, -1 do redis.call('LPUSH', K.ready, plain[i]) end
  else
    chunked('RPUSH', K.ready, plain)
  end
  if #prio > 0 then
    -- Each priority's jobs wait in a list of their own (FIFO, one call per batch and priority);
    -- the prio zset holds the priorities that have some.
    local levels, byp = {}, {}
    for i = 1, #prio, 2 do
      local lvl = prio[i]
      if not byp[lvl] then
        byp[lvl] = {}
        levels[#levels + 1] = lvl
        levels[#levels + 1] = lvl
      end
      local l = byp[lvl]
      l[#l + 1] = prio[i + 1]
    end
    for i = 1, #levels, 2 do
      local l = byp[levels[i]]
      if front then
        for j = #l, 1, -1 do redis.call('LPUSH', K.p .. levels[i], l[j]) end
      else
        chunked('RPUSH', K.p .. levels[i], l)
      end
    end
    chunked('ZADD', K.prio, levels)
    redis.call('HINCRBY', K.stats, 'pready', #prio / 2)
  end
  if ngrouped > 0 then
    for _, g in ipairs(groups) do chunked('ZADD', K.g .. g, byg[g]) end
    redis.call('HINCRBY', K.stats, 'gready', ngrouped)
    groups_offer(K, C, groups, now, true)
  end
end

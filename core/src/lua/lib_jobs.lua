--[[ Shared helpers for the job scripts, pulled in by the include line after their headers
  (Redis scripts cannot call each other), so every script reads and writes job state the same
  way.

  Job meta (KEYS "meta" hash, one field per job): "state|attempts|max|enqueued ms|x"
    state q: pending: delayed (in the delayed zset), active (in the active zset) or else ready;
             attempts = attempts that ended (the delivery under way is attempt attempts + 1);
             x = deliveries ended so far (failed, expired or released).
    state c: completed and retained; attempts = failed attempts before the one that succeeded;
             x = finish ms.
    state x: dead; attempts = all attempts; x = deliveries ended.
  A delivery's lease token is "enqueued.x": it is derived, not stored, so leasing a job writes
  nothing but its active-zset entry. Every delivery that ends without completing bumps x, so a
  stale holder's token never matches again; `enqueued` tells apart two jobs that reused an id.
  Numbers are kept as the strings they were read as where possible: formatting a Lua number is
  a printf, and it showed up in profiles.

  The active zset holds ANCHOR (score +inf) besides the leased jobs. Its length (over 64 bytes)
  keeps the set in skiplist encoding: a worker's active set sits near the listpack limit (128),
  where every ZADD and ZREM would be a linear scan. Readers skip it ('(+inf' bounds).

  Commands run variadic (one call per batch, at most 1000 arguments per call): a call from Lua
  costs about as much as the work it does on a few fields. ]]
local ANCHOR = '\0tideq: keeps this zset in skiplist encoding; never a job id (see lib_jobs.lua)'

local function chunked(cmd, key, args)
  for i = 1, #args, 1000 do
    redis.call(cmd, key, unpack(args, i, math.min(i + 999, #args)))
  end
end

local function hmget(key, fields)
  local out = {}
  for i = 1, #fields, 1000 do
    local part = redis.call('HMGET', key, unpack(fields, i, math.min(i + 999, #fields)))
    for j = 1, #part do out[#out + 1] = part[j] end
  end
  return out
end

-- state, attempts, max, enqueued, x: all strings (see above)
local function parse_meta(m)
  return string.match(m, '^(%a)|(%d+)|(%d+)|(%d+)|(%d*)$')
end

local function meta_of(s, a, mx, enq, x)
  return s .. '|' .. a .. '|' .. mx .. '|' .. enq .. '|' .. x
end

local function token_of(enq, x)
  return enq .. '.' .. x
end

-- Leases `ids` until `deadline` (a string) in the active zset (ANCHOR included, see above).
local function add_active(key, deadline, ids)
  local args = { '+inf', ANCHOR }
  for _, id in ipairs(ids) do
    args[#args + 1] = deadline
    args[#args + 1] = id
  end
  chunked('ZADD', key, args)
end

-- The dead jobs a requeue or purge applies to: `id` when it is dead, or ("" for all) the oldest
-- `limit`.
local function dead_ids(key, id, limit)
  if id ~= '' then
    if redis.call('ZSCORE', key, id) then return { id } end
    return {}
  end
  return redis.call('ZRANGE', key, 0, limit - 1)
end

local function wake(key)
  redis.call('RPUSH', key, '1')
  redis.call('LTRIM', key, -64, -1)
  redis.call('PEXPIRE', key, 60000)
end

-- Completes the (job id, lease token) pairs found in ARGV[first], ARGV[first + 1], ...: only the
-- holder of a job's current delivery may; a stale token gets -1 and changes nothing. Finished
-- jobs are kept (state c, listed in the done list oldest first) up to the newest `keep` and those
-- younger than `keepfor` ms, else deleted at once.
-- K: { active =, done =, jobs =, meta =, errors =, stats = } key names.
-- Returns an array with, per pair, 1 completed or -1 lease lost.
local function complete_leases(K, now, keep, keepfor, first)
  local nows = tostring(now)
  local ids, toks = {}, {}
  for i = first, #ARGV - 1, 2 do
    ids[#ids + 1] = ARGV[i]
    toks[#toks + 1] = ARGV[i + 1]
  end
  local out = {}
  if #ids == 0 then return out end
  local metas = hmget(K.meta, ids)
  local okids, seen, newmeta = {}, {}, {}
  for j, id in ipairs(ids) do
    local m = metas[j]
    local ok = false
    if m and not seen[id] then
      local s, a, mx, enq, x = parse_meta(m)
      if s == 'q' and token_of(enq, x) == toks[j] then
        ok = true
        seen[id] = true
        okids[#okids + 1] = id
        if keep > 0 then
          newmeta[#newmeta + 1] = id
          newmeta[#newmeta + 1] = meta_of('c', a, mx, enq, nows)
        end
      end
    end
    out[j] = ok and 1 or -1
  end
  if #okids == 0 then return out end
  -- A current token means the job is in the active zset: every script keeps the two in step.
  chunked('ZREM', K.active, okids)
  redis.call('HINCRBY', K.stats, 'completed', #okids)
  if keep == 0 then
    chunked('HDEL', K.jobs, okids)
    chunked('HDEL', K.meta, okids)
    chunked('HDEL', K.errors, okids)
    return out
  end
  chunked('HSET', K.meta, newmeta)
  chunked('RPUSH', K.done, okids)
  local old = {}
  local over = redis.call('LLEN', K.done) - keep
  if over > 0 then old = redis.call('LPOP', K.done, over) end
  if keepfor > 0 then
    for _ = 1, 100 do
      local head = redis.call('LINDEX', K.done, 0)
      if not head then break end
      local hm = redis.call('HGET', K.meta, head)
      local finished = hm and tonumber(string.match(hm, '^c|%d+|%d+|%d+|(%d+)$'))
      if finished and finished > now - keepfor then break end
      redis.call('LPOP', K.done)
      old[#old + 1] = head
    end
  end
  if #old > 0 then
    chunked('HDEL', K.jobs, old)
    chunked('HDEL', K.meta, old)
    chunked('HDEL', K.errors, old)
  end
  return out
end


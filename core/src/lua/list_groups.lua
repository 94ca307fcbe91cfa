#!lua flags=no-writes
--[[ A page of the groups a queue knows, each read as group_info.lua reads one: the groups in the
  rotation, those held out of it, those with running jobs, those waiting for their rate window,
  and those with settings of their own (docs/data-model.md, "Queue control"). It walks those five in
  turn with SSCAN / HSCAN / ZSCAN, so one call looks at about `count` groups however many the
  queue has. A group already met in an earlier one of the five is skipped in a later one (checked
  for a SCAN's worth of groups at once), so each is listed once per walk; as with SCAN, a group that stays put through the walk is listed, and
  one that moves meanwhile (say from the rotation to held) may be listed twice or not at all.
  KEYS[1] g (group key prefix)   KEYS[2] gset   KEYS[3] gheld   KEYS[4] gstate hash
  KEYS[5] gwait zset   KEYS[6] gcfg hash
  ARGV[1] part of the walk (1 rotation, 2 held, 3 running, 4 waiting, 5 settings)
  ARGV[2] SCAN cursor in that part   ARGV[3] count (groups wanted, 1-250)
  Returns: { rows, next part (0: the walk is done), next cursor }, each row
  { group, { ready, running, own limit, own rate, paused ("1" or false), limiter (false none) } }. ]]
--#include lib/chunked.lua
--#K
local part, cursor, count = tonumber(ARGV[1]), ARGV[2], tonumber(ARGV[3])

-- A small hash is stored as a list (up to Redis's hash-max-listpack-entries, 128 or 512 by
-- default), where each lookup walks it: read such a hash whole, once, instead.
local function small(key)
  if redis.call('HLEN', key) > 1024 then return nil end
  local flat, t = redis.call('HGETALL', key), {} -- bounded: 1024 fields
  for i = 1, #flat, 2 do t[flat[i]] = flat[i + 1] end
  return t
end
local state, cfg = small(K.gstate), small(K.gcfg)
-- Running jobs of each of `names`.
local function running(names)
  local out = {}
  if state then
    for i, g in ipairs(names) do out[i] = tonumber(state[g] or '0') end
    return out
  end
  for i, n in ipairs(chunked_read('HMGET', K.gstate, names)) do out[i] = tonumber(n or '0') end
  return out
end
-- Own settings of each of `names`: { limit, rate, paused, limiter } (false when unset).
local function own(names)
  local out = {}
  if cfg then
    for i, g in ipairs(names) do
      out[i] = { cfg['limit:' .. g] or false, cfg['rate:' .. g] or false, cfg['paused:' .. g] or false,
        cfg['limiter:' .. g] or false }
    end
    return out
  end
  local fields = {}
  for _, g in ipairs(names) do
    fields[#fields + 1] = 'limit:' .. g
    fields[#fields + 1] = 'rate:' .. g
    fields[#fields + 1] = 'paused:' .. g
    fields[#fields + 1] = 'limiter:' .. g
  end
  local v = chunked_read('HMGET', K.gcfg, fields)
  for i = 1, #names do out[i] = { v[4 * i - 3], v[4 * i - 2], v[4 * i - 1], v[4 * i] } end
  return out
end

-- The groups one SCAN call of part `p` gives, from the names (and values) it returned.
local function found(p, items)
  local out = {}
  if p <= 2 then
    for _, g in ipairs(items) do out[#out + 1] = g end
  elseif p == 3 then
    for i = 1, #items, 2 do
      if tonumber(items[i + 1]) > 0 then out[#out + 1] = items[i] end
    end
  elseif p == 4 then
    for i = 1, #items, 2 do out[#out + 1] = items[i] end
  else
    -- "limit:<g>", "rate:<g>", "paused:<g>", "limiter:<g>": a group is listed by the first of
    -- those it has.
    local kinds, names = {}, {}
    for i = 1, #items, 2 do
      local kind, g = string.match(items[i], '^(%a+):(.*)$')
      -- "back:<g>" marks a group given back to its limiter for a while: listed by its others.
      if g and kind ~= 'back' then
        kinds[#kinds + 1] = kind
        names[#names + 1] = g
      end
    end
    local o = own(names)
    for i, g in ipairs(names) do
      local first = true
      for j, k in ipairs({ 'limit', 'rate', 'paused', 'limiter' }) do
        if k == kinds[i] then break end
        if o[i][j] then first = false end
      end
      if first then out[#out + 1] = g end
    end
  end
  return out
end
-- Of `names` (from part `p`), those not met in a part before `p`: a few calls for all of them.
local function new_in(p, names)
  if p == 1 or #names == 0 then return names end
  local a = chunked_read('SMISMEMBER', K.gset, names)
  local b = p > 2 and chunked_read('SMISMEMBER', K.gheld, names) or {}
  local r = p > 3 and running(names) or {}
  local w = p > 4 and chunked_read('ZMSCORE', K.gwait, names) or {}
  local out = {}
  for i, g in ipairs(names) do
    if a[i] == 0 and (p <= 2 or b[i] == 0) and (p <= 3 or r[i] == 0) and (p <= 4 or not w[i]) then
      out[#out + 1] = g
    end
  end
  return out
end

local keys = { K.gset, K.gheld, K.gstate, K.gwait, K.gcfg }
local function scan(p, at)
  if p <= 2 then return redis.call('SSCAN', keys[p], at, 'COUNT', count) end
  if p == 4 then return redis.call('ZSCAN', keys[p], at, 'COUNT', count) end
  return redis.call('HSCAN', keys[p], at, 'COUNT', count)
end

local names = {}
-- SCAN calls until about `count` groups were looked at (at most 8 calls): parts with few groups
-- are crossed in one call, and groups met in an earlier part cost no more than the others.
local looked = 0
for _ = 1, 8 do
  if part > 5 or looked >= count then break end
  local r = scan(part, cursor)
  cursor = r[1]
  local got = found(part, r[2])
  looked = looked + #got
  for _, g in ipairs(new_in(part, got)) do names[#names + 1] = g end
  if cursor == '0' then
    part = part + 1
  end
end
local o, run, rows = own(names), running(names), {}
for i, g in ipairs(names) do
  rows[i] = { g, { redis.call('ZCARD', K.g .. g), run[i], o[i][1], o[i][2], o[i][3], o[i][4] } }
end
if part > 5 then return { rows, 0, '0' } end
return { rows, part, cursor }

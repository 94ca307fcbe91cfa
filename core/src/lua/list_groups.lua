#!lua flags=no-writes
--[[ A page of the groups a queue knows, each read as group_info.lua reads one: the groups in the
  rotation, those held out of it, those with running jobs, those waiting for their rate window,
  and those with settings of their own (lib_jobs.lua, "Flow control"). It walks those five in
  turn with SSCAN / HSCAN / ZSCAN, so one call costs about `count` groups' work however many the
  queue has. A group already met in an earlier one of the five is skipped in a later one, so each
  is listed once per walk; as with SCAN, a group that stays put through the walk is listed, and
  one that moves meanwhile (say from the rotation to held) may be listed twice or not at all.
  KEYS[1] g (group key prefix)   KEYS[2] gset   KEYS[3] gheld   KEYS[4] gstate hash
  KEYS[5] gwait zset   KEYS[6] gcfg hash
  ARGV[1] part of the walk (1 rotation, 2 held, 3 running, 4 waiting, 5 settings)
  ARGV[2] SCAN cursor in that part   ARGV[3] count (groups wanted, 1-500)
  Returns: { rows, next part (0: the walk is done), next cursor }, each row
  { group, { ready, running, own limit, own rate, paused ("1" or false) } }. ]]
local K = { g = KEYS[1], gset = KEYS[2], gheld = KEYS[3], gstate = KEYS[4], gwait = KEYS[5],
  gcfg = KEYS[6] }
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
local function running(g)
  if state then return tonumber(state[g] or '0') end
  return tonumber(redis.call('HGET', K.gstate, g) or '0')
end
local function own(g)
  local f = { 'limit:' .. g, 'rate:' .. g, 'paused:' .. g }
  if cfg then return { cfg[f[1]] or false, cfg[f[2]] or false, cfg[f[3]] or false } end
  return redis.call('HMGET', K.gcfg, f[1], f[2], f[3])
end
-- Whether `g` was met in a part of the walk before `p`.
local function met_before(p, g)
  return (p > 1 and redis.call('SISMEMBER', K.gset, g) == 1)
    or (p > 2 and redis.call('SISMEMBER', K.gheld, g) == 1)
    or (p > 3 and running(g) > 0)
    or (p > 4 and redis.call('ZSCORE', K.gwait, g) ~= false)
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
    -- "limit:<g>", "rate:<g>", "paused:<g>": a group is listed by the first of those it has.
    local order = { 'limit', 'rate', 'paused' }
    for i = 1, #items, 2 do
      local kind, g = string.match(items[i], '^(%a+):(.*)$')
      if g then
        local first, o = true, own(g)
        for i, k in ipairs(order) do
          if k == kind then break end
          if o[i] then first = false end
        end
        if first then out[#out + 1] = g end
      end
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
local rows = {}
-- At most 8 SCAN calls: parts with few groups are crossed in one call, and a call never does
-- much more than `count` groups' work.
for _ = 1, 8 do
  if part > 5 or #rows >= count then break end
  local r = scan(part, cursor)
  cursor = r[1]
  for _, g in ipairs(found(part, r[2])) do
    if not met_before(part, g) then
      local o = own(g)
      rows[#rows + 1] = { g, { redis.call('ZCARD', K.g .. g), running(g), o[1], o[2], o[3] } }
    end
  end
  if cursor == '0' then
    part = part + 1
  end
end
if part > 5 then return { rows, 0, '0' } end
return { rows, part, cursor }

--[[ A queue's shared limiter, taken around its fetches, by the Redis clock (docs/data-model.md,
  "Limiters", "A queue's limiter"). A worker takes room for up to the jobs it wants before it
  fetches, fetches at most that many, then settles: a concurrency limiter's reserved slots become
  one holder per job leased (held until the job ends, renewed with its lease), and what was taken
  but not used is given back (a window's starts, a bucket's tokens).
  KEYS[1] lim hash   KEYS[2] hold zset
  ARGV[1] the operation:
    "take": ARGV[2] most wanted, ARGV[3] lease ms, ARGV[4] a reservation prefix (unique to this
      take);
    "settle": ARGV[2] the reservation prefix, ARGV[3] granted, ARGV[4] used, ARGV[5] lease ms,
      ARGV[6], ...: the holder token of each job leased (a concurrency limiter);
    "release": ARGV[2], ...: holder tokens;
    "extend": ARGV[2] lease ms, ARGV[3], ...: holder tokens, those still held renewed;
    "hold": ARGV[2] lease ms, ARGV[3], ...: the holder tokens of jobs already leased (a group's
      limiter, taken after the fetch), in order: the first ones the limiter has room for take it
      (a concurrency limiter's holders, a window's starts, a bucket's tokens).
  Returns: take: {kind, granted, retry ms (when none: until the limiter may have room)}, or
  {"", 0, 0} no such limiter; hold: {kind, granted (the first k holders), retry ms (when not all:
  until the limiter may have room)}, or {"", 0, 0}; settle: 1; release and extend: how many were
  held. ]]
--#include lib/base.lua
--#include lib/chunked.lua
--#K
local op = ARGV[1]

-- Keeps the hold set at least `ms` more (NX: one without a TTL; GT: never shortened).
local function keep_until(ms)
  redis.call('PEXPIRE', K.hold, ms, 'NX')
  redis.call('PEXPIRE', K.hold, ms, 'GT')
end

if op == 'release' then
  local tokens, n = {}, 0
  for i = 2, #ARGV do tokens[#tokens + 1] = ARGV[i] end
  for i = 1, #tokens, 1000 do
    n = n + redis.call('ZREM', K.hold, unpack(tokens, i, math.min(i + 999, #tokens)))
  end
  return n
end

local now = now_ms()
if op == 'extend' then
  local ms, n = tonumber(ARGV[2]), 0
  for i = 3, #ARGV do
    local at = redis.call('ZSCORE', K.hold, ARGV[i])
    if at and tonumber(at) > now then
      redis.call('ZADD', K.hold, 'XX', now + ms, ARGV[i])
      n = n + 1
    end
  end
  if n > 0 then keep_until(ms) end
  return n
end

local def = redis.call('HMGET', K.lim, 'kind', 'n', 'ms', 'refill', 'tokens', 'ts')
local kind, limit, wms = def[1], tonumber(def[2]), tonumber(def[3])
if not kind then return {'', 0, 0} end
local refill = tonumber(def[4])
-- A bucket's tokens now.
local function tokens()
  return math.min(limit, tonumber(def[5] or limit) + math.max(0, now - tonumber(def[6] or now)) * refill / 1000)
end

if op == 'hold' then
  local lease, want = tonumber(ARGV[2]), #ARGV - 2
  if kind == 'bucket' then
    local have = tokens()
    local k = math.min(want, math.floor(have))
    if k > 0 then redis.call('HSET', K.lim, 'tokens', tostring(have - k), 'ts', now) end
    if k == want then return {kind, k, 0} end
    return {kind, k, math.max(1, math.ceil((1 - (have - k)) * 1000 / refill))}
  end
  local concurrent = kind == 'concurrent'
  redis.call('ZREMRANGEBYSCORE', K.hold, '-inf', concurrent and now or now - wms)
  local k = math.max(0, math.min(want, limit - redis.call('ZCARD', K.hold)))
  if k > 0 then
    local args = {}
    for i = 1, k do
      args[#args + 1] = concurrent and now + lease or now
      args[#args + 1] = ARGV[i + 2]
    end
    chunked('ZADD', K.hold, args)
    if concurrent then keep_until(lease) else redis.call('PEXPIRE', K.hold, wms) end
  end
  if k == want then return {kind, k, 0} end
  local first = tonumber(redis.call('ZRANGE', K.hold, 0, 0, 'WITHSCORES')[2] or now)
  local wait = concurrent and math.min(first - now, 250) or first + wms - now
  return {kind, k, math.max(1, wait)}
end

if op == 'take' then
  local want, lease, prefix = tonumber(ARGV[2]), tonumber(ARGV[3]), ARGV[4]
  if kind == 'bucket' then
    local have = tokens()
    local k = math.min(want, math.floor(have))
    if k == 0 then return {kind, 0, math.max(1, math.ceil((1 - have) * 1000 / refill))} end
    redis.call('HSET', K.lim, 'tokens', tostring(have - k), 'ts', now)
    return {kind, k, 0}
  end
  if kind == 'concurrent' then
    redis.call('ZREMRANGEBYSCORE', K.hold, '-inf', now)
  else
    redis.call('ZREMRANGEBYSCORE', K.hold, '-inf', now - wms)
  end
  local k = math.min(want, limit - redis.call('ZCARD', K.hold))
  if k <= 0 then
    local first = tonumber(redis.call('ZRANGE', K.hold, 0, 0, 'WITHSCORES')[2])
    local wait = kind == 'concurrent' and math.min(first - now, 250) or first + wms - now
    return {kind, 0, math.max(1, wait)}
  end
  local args = {}
  for i = 1, k do
    args[#args + 1] = kind == 'concurrent' and now + lease or now
    args[#args + 1] = prefix .. i
  end
  chunked('ZADD', K.hold, args)
  if kind == 'concurrent' then keep_until(lease) else redis.call('PEXPIRE', K.hold, wms) end
  return {kind, k, 0}
end

-- settle
local prefix, granted, used, lease = ARGV[2], tonumber(ARGV[3]), tonumber(ARGV[4]), tonumber(ARGV[5])
if kind == 'bucket' then
  if used < granted then
    redis.call('HSET', K.lim, 'tokens', tostring(math.min(limit, tokens() + granted - used)), 'ts', now)
  end
  return 1
end
local unused = {}
for i = kind == 'concurrent' and 1 or used + 1, granted do unused[#unused + 1] = prefix .. i end
chunked('ZREM', K.hold, unused)
if kind == 'concurrent' and #ARGV >= 6 then
  local args = {}
  for i = 6, #ARGV do
    args[#args + 1] = now + lease
    args[#args + 1] = ARGV[i]
  end
  chunked('ZADD', K.hold, args)
  keep_until(lease)
end
return 1

--[[ Take from a shared limiter, by the Redis clock (docs/data-model.md, "Limiters").
  concurrent: a holder's slot, leased until now + its lease (holders past their lease are
  dropped first, so a dead holder's slot comes back); window: one of the n starts of the last
  `ms` milliseconds; bucket: `cost` tokens, after refilling the bucket for the time since it was
  last taken from. Nothing is written when the limiter is over its limit, unknown, or the cost
  does not fit it.
  KEYS[1] lim hash   KEYS[2] hold zset
  ARGV[1] holder token (unique to this acquire)   ARGV[2] cost (a positive integer)
  Returns: {1, lease deadline ms (concurrent; 0 otherwise)} taken; {0, ms until it may be
  taken (a concurrency limiter: 250 at most), kind} over the limit; {-1} no such limiter; {-2, kind, n} a cost above 1 on a concurrent or
  window limiter, or above a bucket's capacity. ]]
--#include lib/base.lua
--#K
local token, cost = ARGV[1], tonumber(ARGV[2])
local def = redis.call('HMGET', K.lim, 'kind', 'n', 'ms', 'refill', 'tokens', 'ts')
local kind, n, ms = def[1], tonumber(def[2]), tonumber(def[3])
if not kind then return {-1} end
if (kind ~= 'bucket' and cost ~= 1) or cost > n then return {-2, kind, n} end
local now = now_ms()

if kind == 'concurrent' then
  redis.call('ZREMRANGEBYSCORE', K.hold, '-inf', now)
  if redis.call('ZCARD', K.hold) >= n then
    local first = redis.call('ZRANGE', K.hold, 0, 0, 'WITHSCORES')
    return {0, math.max(1, math.min(tonumber(first[2]) - now, 250)), kind}
  end
  redis.call('ZADD', K.hold, now + ms, token)
  -- The set outlives its holders' leases (NX: a set without a TTL; GT: never shortened).
  redis.call('PEXPIRE', K.hold, ms, 'NX')
  redis.call('PEXPIRE', K.hold, ms, 'GT')
  return {1, now + ms}
end

if kind == 'window' then
  redis.call('ZREMRANGEBYSCORE', K.hold, '-inf', now - ms)
  if redis.call('ZCARD', K.hold) >= n then
    local first = redis.call('ZRANGE', K.hold, 0, 0, 'WITHSCORES')
    return {0, math.max(1, tonumber(first[2]) + ms - now), kind}
  end
  redis.call('ZADD', K.hold, now, token)
  redis.call('PEXPIRE', K.hold, ms)
  return {1, 0}
end

-- bucket: `refill` tokens a second, up to `n`.
local refill = tonumber(def[4])
local tokens = math.min(n, tonumber(def[5] or n) + math.max(0, now - tonumber(def[6] or now)) * refill / 1000)
if tokens < cost then
  return {0, math.max(1, math.ceil((cost - tokens) * 1000 / refill)), kind}
end
redis.call('HSET', K.lim, 'tokens', tostring(tokens - cost), 'ts', now)
return {1, 0}

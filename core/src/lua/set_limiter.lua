--[[ Define a shared limiter, or change its definition (docs/data-model.md, "Limiters"). A
  concurrency limiter keeps its holders when its size or lease changes; a window limiter keeps its
  starts; a bucket keeps its tokens (at most its new capacity). A change of kind starts afresh:
  the holders or starts are dropped and a bucket starts full. The caller checked every argument.
  KEYS[1] lim hash   KEYS[2] hold zset
  ARGV[1] kind: "concurrent", "window" or "bucket"
  ARGV[2] n: concurrent holders, starts per window, or a bucket's capacity
  ARGV[3] ms: a holder's lease, or the window's length ("0" for a bucket)
  ARGV[4] tokens refilled per second ("0" unless a bucket)
  Returns: 1 defined or changed, 0 the same definition stood. ]]
--#include lib/base.lua
--#K
local kind, n, ms, refill = ARGV[1], ARGV[2], ARGV[3], ARGV[4]
local old = redis.call('HMGET', K.lim, 'kind', 'n', 'ms', 'refill')
if old[1] == kind and old[2] == n and old[3] == ms and old[4] == refill then return 0 end
if old[1] ~= kind then
  redis.call('DEL', K.hold)
  redis.call('HDEL', K.lim, 'tokens', 'ts')
  if kind == 'bucket' then
    redis.call('HSET', K.lim, 'tokens', n, 'ts', now_ms())
  end
elseif kind == 'bucket' then
  local tokens = tonumber(redis.call('HGET', K.lim, 'tokens') or n)
  if tokens > tonumber(n) then redis.call('HSET', K.lim, 'tokens', n) end
end
redis.call('HSET', K.lim, 'kind', kind, 'n', n, 'ms', ms, 'refill', refill)
return 1

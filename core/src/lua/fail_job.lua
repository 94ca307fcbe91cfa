--[[ Fail one leased attempt: retry after ARGV[4] ms, or dead-letter the job when its attempts
  reached max. Only the holder of the current delivery may; anyone else gets -1 (LEASE_LOST) and
  nothing changes.
  KEYS[1] active zset   KEYS[2] ready list   KEYS[3] delayed zset   KEYS[4] dead zset
  KEYS[5] meta hash     KEYS[6] errors hash  KEYS[7] stats hash     KEYS[8] wake list
  ARGV[1] job id   ARGV[2] lease token   ARGV[3] error text (already size-capped)
  ARGV[4] retry delay ms
  Returns: -1 lease lost, 1 retried, 2 dead-lettered. ]]
--#include lib_jobs.lua
local id = ARGV[1]
local m = redis.call('HGET', KEYS[5], id)
if not m then return -1 end
local s, a, mx, enq, x = parse_meta(m)
if s ~= 'q' or token_of(enq, x) ~= ARGV[2] or redis.call('ZREM', KEYS[1], id) == 0 then
  return -1
end
x = tonumber(x) + 1
local t = redis.call('TIME')
local now = t[1] * 1000 + math.floor(t[2] / 1000)
local att = tonumber(a) + 1
redis.call('HSET', KEYS[6], id, ARGV[3])
if att >= tonumber(mx) then
  redis.call('HSET', KEYS[5], id, meta_of('x', att, mx, enq, x))
  redis.call('ZADD', KEYS[4], now, id)
  redis.call('HINCRBY', KEYS[7], 'failed', 1)
  return 2
end
redis.call('HSET', KEYS[5], id, meta_of('q', att, mx, enq, x))
local delay = tonumber(ARGV[4])
if delay <= 0 then
  redis.call('RPUSH', KEYS[2], id)
else
  redis.call('ZADD', KEYS[3], now + delay, id)
end
redis.call('HINCRBY', KEYS[7], 'retried', 1)
wake(KEYS[8])
return 1

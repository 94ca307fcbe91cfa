--[[ Fail or release one leased job. Only the holder of the current delivery may; anyone else
  gets -1 (LEASE_LOST) and nothing changes. (lib_jobs.lua is put in front.)
  fail: the attempt failed: retry after ARGV[5] ms, or dead-letter when attempts reached max.
  release: graceful shutdown: back to the front of ready, the attempt not counted.
  KEYS[1] active zset   KEYS[2] ready list   KEYS[3] delayed zset   KEYS[4] dead zset
  KEYS[5] jobs hash     KEYS[6] meta hash    KEYS[7] errors hash    KEYS[8] stats hash
  KEYS[9] wake list
  ARGV[1] "fail" | "release"   ARGV[2] job id   ARGV[3] lease token
  ARGV[4] error text (fail; already size-capped)   ARGV[5] retry delay ms (fail)
  Returns: -1 lease lost; fail -> 1 retried, 2 dead-lettered; release -> 1 ]]
local id = ARGV[2]
local m = redis.call('HGET', KEYS[6], id)
if not m then return -1 end
local s, a, mx, enq, x = parse_meta(m)
if s ~= 'q' or token_of(enq, x) ~= ARGV[3] or redis.call('ZREM', KEYS[1], id) == 0 then
  return -1
end

x = tonumber(x) + 1
if ARGV[1] == 'release' then
  redis.call('HSET', KEYS[6], id, meta_of('q', a, mx, enq, x))
  redis.call('LPUSH', KEYS[2], id)
  wake(KEYS[9])
  return 1
end
if ARGV[1] ~= 'fail' then return redis.error_reply('unknown action ' .. tostring(ARGV[1])) end

local t = redis.call('TIME')
local now = t[1] * 1000 + math.floor(t[2] / 1000)
local att = tonumber(a) + 1
redis.call('HSET', KEYS[7], id, ARGV[4])
if att >= tonumber(mx) then
  redis.call('HSET', KEYS[6], id, meta_of('x', att, mx, enq, x))
  redis.call('ZADD', KEYS[4], now, id)
  redis.call('HINCRBY', KEYS[8], 'failed', 1)
  return 2
end
redis.call('HSET', KEYS[6], id, meta_of('q', att, mx, enq, x))
local delay = tonumber(ARGV[5])
if delay <= 0 then
  redis.call('RPUSH', KEYS[2], id)
else
  redis.call('ZADD', KEYS[3], now + delay, id)
end
redis.call('HINCRBY', KEYS[8], 'retried', 1)
wake(KEYS[9])
return 1

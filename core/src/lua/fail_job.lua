--[[ Fail one leased attempt: retry after ARGV[4] ms, or dead-letter the job when its attempts
  reached max. Only the holder of the current delivery may; anyone else gets -1 (LEASE_LOST) and
  nothing changes.
  KEYS[1] active zset   KEYS[2] ready list   KEYS[3] delayed zset   KEYS[4] dead zset
  KEYS[5] jobs hash     KEYS[6] meta hash    KEYS[7] errors hash    KEYS[8] stats hash
  KEYS[9] wake list     KEYS[10] idem zset
  ARGV[1] job id   ARGV[2] lease token   ARGV[3] error text (already size-capped)
  ARGV[4] retry delay ms   ARGV[5] queue policy (lib_jobs.lua)   ARGV[6] "1": dead-letter now
  (the attempt cannot succeed, e.g. an unknown task), whatever its attempts
  Returns: -1 lease lost, 1 retried, 2 dead-lettered. ]]
--#include lib_jobs.lua
local K = { active = KEYS[1], ready = KEYS[2], delayed = KEYS[3], dead = KEYS[4], jobs = KEYS[5],
  meta = KEYS[6], errors = KEYS[7], stats = KEYS[8], wake = KEYS[9], idem = KEYS[10] }
local id = ARGV[1]
local m = redis.call('HGET', K.meta, id)
if not m then return -1 end
local s, a, mx, enq, x = parse_meta(m)
if s ~= 'q' or token_of(enq, x) ~= ARGV[2] or redis.call('ZREM', K.active, id) == 0 then
  return -1
end
x = tonumber(x) + 1
local now = now_ms()
local att = tonumber(a) + 1
if att >= tonumber(mx) or ARGV[6] == '1' then
  bury(K, now, policy(ARGV[5]), { { id, meta_of('x', att, mx, enq, x), ARGV[3] } })
  return 2
end
redis.call('HSET', K.errors, id, ARGV[3])
redis.call('HSET', K.meta, id, meta_of('q', att, mx, enq, x))
local delay = tonumber(ARGV[4])
if delay <= 0 then
  redis.call('RPUSH', K.ready, id)
else
  redis.call('ZADD', K.delayed, now + delay, id)
end
redis.call('HINCRBY', K.stats, 'retried', 1)
wake(K.wake)
return 1

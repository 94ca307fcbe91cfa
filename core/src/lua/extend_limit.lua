--[[ Extend a concurrency limiter's slot: its lease runs until now + ARGV[2] ms, by the Redis
  clock (docs/data-model.md, "Limiters"). A holder whose lease ran out was dropped (its slot may
  be another's by now): nothing changes.
  KEYS[1] hold zset
  ARGV[1] holder token   ARGV[2] lease ms
  Returns: the new lease deadline (ms), or 0 not held (its lease had run out). ]]
--#include lib/base.lua
--#K
local ms = tonumber(ARGV[2])
local deadline = redis.call('ZSCORE', K.hold, ARGV[1])
local now = now_ms()
if not deadline or tonumber(deadline) <= now then return 0 end
redis.call('ZADD', K.hold, 'XX', now + ms, ARGV[1])
redis.call('PEXPIRE', K.hold, ms, 'NX')
redis.call('PEXPIRE', K.hold, ms, 'GT')
return now + ms

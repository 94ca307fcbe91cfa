--[[ Pause or resume a schedule (see "Schedules" in docs/data-model.md). Pausing keeps its spec and
  moves its next slot from `snext` (where the firing processes look) to `spause`, so it does not
  fire; resuming puts that slot back: a slot that passed while paused fires once at resume (the
  latest missed, as after an outage), then the schedule goes on from its next slot.
  KEYS[1] sched hash   KEYS[2] snext zset   KEYS[3] spause hash
  ARGV[1] name   ARGV[2] "1" pause, "0" resume
  Returns: -1 no such schedule (nothing written), 0 it was already so, 1 changed. ]]
local name = ARGV[1]
if redis.call('HEXISTS', KEYS[1], name) == 0 then return -1 end
local kept = redis.call('HGET', KEYS[3], name)
if ARGV[2] == '1' then
  if kept then return 0 end
  redis.call('HSET', KEYS[3], name, redis.call('ZSCORE', KEYS[2], name) or '0')
  redis.call('ZREM', KEYS[2], name)
  return 1
end
if not kept then return 0 end
redis.call('HDEL', KEYS[3], name)
if kept ~= '0' then redis.call('ZADD', KEYS[2], kept, name) end
return 1

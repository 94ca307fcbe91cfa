--[[ Remove a schedule: no slot of it fires after this (a fire under way fails its guard).
  KEYS[1] sched hash   KEYS[2] snext zset   KEYS[3] cfg hash   KEYS[4] spause hash
  KEYS[5] slast hash
  ARGV[1] name
  Returns: 1 removed, 0 there was none. ]]
redis.call('ZREM', KEYS[2], ARGV[1])
redis.call('HDEL', KEYS[4], ARGV[1])
redis.call('HDEL', KEYS[5], ARGV[1])
local n = redis.call('HDEL', KEYS[1], ARGV[1])
if redis.call('EXISTS', KEYS[1]) == 0 then redis.call('HDEL', KEYS[3], 'sched') end
return n

--[[ Create or change a schedule (see "Schedules" in docs/data-model.md). The same spec again changes
  nothing (its next slot is kept, so processes that all declare their schedules at start disturb
  nothing); a new spec gets the next version and its next slot, so a fire prepared under the old
  spec fails its guard. A paused schedule stays paused (a new spec's next slot is kept for its
  resume).
  KEYS[1] sched hash   KEYS[2] snext zset   KEYS[3] cfg hash (its `sched` field: "1" while there are
  schedules)   KEYS[4] spause hash (paused schedule -> its next slot kept)
  ARGV[1] name   ARGV[2] spec (MessagePack)   ARGV[3] next slot ms for a new spec (0: none)
  Returns: { 1 changed or created / 0 unchanged, the next slot ("" when none) }. ]]
local name, spec = ARGV[1], ARGV[2]
local cur = redis.call('HGET', KEYS[1], name)
local paused = redis.call('HGET', KEYS[4], name)
local ver = 1
if cur then
  local v, body = string.match(cur, '^(%d+)|(.*)$')
  if body == spec then
    if paused then
      return { 0, paused ~= '0' and paused or '' }
    end
    local nxt = redis.call('ZSCORE', KEYS[2], name)
    if not nxt and ARGV[3] ~= '0' then
      redis.call('ZADD', KEYS[2], ARGV[3], name)
      nxt = ARGV[3]
    end
    return { 0, nxt or '' }
  end
  ver = (tonumber(v) or 0) + 1
end
redis.call('HSET', KEYS[1], name, ver .. '|' .. spec)
redis.call('HSET', KEYS[3], 'sched', '1')
if paused then
  redis.call('HSET', KEYS[4], name, ARGV[3])
  return { 1, ARGV[3] ~= '0' and ARGV[3] or '' }
end
if ARGV[3] == '0' then
  redis.call('ZREM', KEYS[2], name)
  return { 1, '' }
end
redis.call('ZADD', KEYS[2], ARGV[3], name)
return { 1, ARGV[3] }
